import PushPipeCore

/// The OpenAPI 3.1 document of the routes some pipelines declare (`pushpipe openapi`): what the
/// host serves for them, so an app developer generates a client from it and schemathesis
/// checks the daemon against it. Every route answers errors the same way (`{"error", "field"}`),
/// with the statuses the host and the route kinds use.
public enum OpenAPIDocument {
    public static func make(_ pipelines: [PipelineDefinition], title: String = "pushpipe") -> JSON {
        var paths: [String: [String: JSON]] = [:]
        for pipeline in pipelines.sorted(by: { $0.name < $1.name }) {
            for declared in pipeline.routes {
                let route = declared.route
                paths[openAPIPath(route.path), default: [:]][route.method.lowercased()] = operation(route, pipeline: pipeline.name)
            }
        }
        for (path, summary) in [
            ("/healthz", "200 while the process serves requests."), ("/readyz", "200 when the store answers and every pipeline runs; 503 otherwise."),
        ] {
            let status = RouteContract.object(["status": RouteContract.string], required: ["status"])
            paths[path] = [
                "get": [
                    "operationId": .string(String(path.dropFirst())), "summary": .string(summary), "tags": ["health"],
                    "responses": ["200": answer(status, "OK"), "503": ["$ref": "#/components/responses/Unavailable"]],
                ]
            ]
        }
        return [
            "openapi": "3.1.0",
            "info": [
                "title": .string(title), "version": "1",
                "description": .string(
                    "The routes of the pipelines \(pipelines.map(\.name).sorted().joined(separator: ", ")). Errors are {\"error\", \"field\"}."
                ),
            ],
            "paths": .object(paths.mapValues { .object($0) }),
            "components": components,
        ]
    }

    /// `/check/:user_id` as OpenAPI writes it, `/check/{user_id}`.
    static func openAPIPath(_ path: String) -> String {
        path.split(separator: "/", omittingEmptySubsequences: false)
            .map { $0.hasPrefix(":") ? "{\($0.dropFirst())}" : String($0) }.joined(separator: "/")
    }

    static func operation(_ route: RouteDefinition, pipeline: String) -> JSON {
        let contract = route.contract
        var parameters: [JSON] = route.path.split(separator: "/").filter { $0.hasPrefix(":") }.map { segment in
            let name = String(segment.dropFirst())
            return ["name": .string(name), "in": "path", "required": true, "schema": contract.path[name] ?? ["type": "string", "minLength": 1]]
        }
        for (name, schema) in contract.query.sorted(by: { $0.key < $1.key }) {
            parameters.append(["name": .string(name), "in": "query", "required": false, "schema": schema])
        }
        var responses: [String: JSON] = [:]
        for (status, schema) in contract.responses {
            responses[String(status)] = answer(schema, status == 202 ? "Accepted" : "OK", headers: contract.responseHeaders)
        }
        for (status, name) in [
            (400, "BadRequest"), (404, "NotFound"), (413, "TooLarge"), (415, "UnsupportedMediaType"),
            (422, "Unprocessable"), (429, "TooManyRequests"), (503, "Unavailable"),
        ] {
            responses[String(status)] = ["$ref": .string("#/components/responses/\(name)")]
        }
        var operation: [String: JSON] = [
            "operationId": .string("\(pipeline) \(route.method) \(route.path)"),
            "summary": .string(contract.summary),
            "tags": [.string(pipeline)],
            "parameters": .array(parameters),
            "responses": .object(responses),
        ]
        switch route.authentication {
        case .none:
            break
        case .token:
            operation["security"] = [["backendToken": []]]
            responses["401"] = ["$ref": "#/components/responses/Unauthorized"]
        case .jwt:
            operation["security"] = [["userJWT": []]]
            responses["401"] = ["$ref": "#/components/responses/Unauthorized"]
        case .identity:
            operation["security"] = [["userCredential": []]]
            responses["401"] = ["$ref": "#/components/responses/Unauthorized"]
            responses["403"] = ["$ref": "#/components/responses/Forbidden"]
            responses["502"] = ["$ref": "#/components/responses/BadGateway"]
        }
        for (status, description) in contract.errors {
            responses[String(status)] = [
                "description": .string(description), "content": ["application/json": ["schema": ["$ref": "#/components/schemas/Error"]]],
            ]
        }
        operation["responses"] = .object(responses)
        if let body = contract.body {
            operation["requestBody"] = ["required": true, "content": ["application/json": ["schema": body]]]
        }
        return .object(operation)
    }

    static func answer(_ schema: JSON, _ description: String, headers: [String: String] = [:]) -> JSON {
        var answer: [String: JSON] = ["description": .string(description), "content": ["application/json": ["schema": schema]]]
        if !headers.isEmpty { answer["headers"] = .object(headers.mapValues { ["description": .string($0), "schema": RouteContract.string] }) }
        return .object(answer)
    }

    static var components: JSON {
        let error = RouteContract.object(["error": RouteContract.string, "field": RouteContract.nullableString], required: ["error"])
        let retryAfter: JSON = ["Retry-After": ["description": "Seconds until trying again makes sense.", "schema": ["type": "string"]]]
        var responses: [String: JSON] = [:]
        for (name, description) in [
            ("BadRequest", "The request is malformed; `field` names what."), ("Unauthorized", "Missing or invalid credentials."),
            ("NotFound", "No such route, user or event (another caller's event is not found either)."),
            ("TooLarge", "The body is larger than the route's `limits.max_body`."),
            ("UnsupportedMediaType", "The body is not application/json."),
            ("Unprocessable", "Well-formed, but a value is of the wrong kind (or an Idempotency-Key came with another body)."),
            ("Forbidden", "The credential belongs to another user than the one the request names."),
            ("BadGateway", "The identity check answered something that names no user."),
        ] {
            responses[name] = [
                "description": .string(description), "content": ["application/json": ["schema": ["$ref": "#/components/schemas/Error"]]],
            ]
        }
        for (name, description) in [
            ("TooManyRequests", "Past the route's rate limit."),
            ("Unavailable", "Stopping, restarting, or the store does not answer: nothing was stored; send it again."),
        ] {
            responses[name] = [
                "description": .string(description), "headers": retryAfter,
                "content": ["application/json": ["schema": ["$ref": "#/components/schemas/Error"]]],
            ]
        }
        return [
            "schemas": ["Error": error],
            "responses": .object(responses),
            "securitySchemes": [
                "backendToken": [
                    "type": "http", "scheme": "bearer", "description": "The backend's shared token (a source's `auth: {type: token}`).",
                ],
                "userJWT": [
                    "type": "http", "scheme": "bearer", "bearerFormat": "JWT", "description": "A user's HS256 JWT (a route's `auth: {type: jwt}`).",
                ],
                "userCredential": [
                    "type": "http", "scheme": "bearer",
                    "description": "A user's credential, which an identity URL vouches for (a route's `auth: {type: identity}`, e.g. an OGS token).",
                ],
            ],
        ]
    }
}
