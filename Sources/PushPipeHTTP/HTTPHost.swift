import Foundation
import HTTPTypes
import Hummingbird
import Logging
import ServiceLifecycle
import Synchronization
import PushPipeCore

/// Serves every route the running pipelines declare, plus `GET /healthz` and `GET /readyz`.
///
/// Routing is done here, not by Hummingbird's router, because the table changes on reload
/// without restarting the server, and because a path that exists with another method must
/// answer 405, not 404.
public final class HTTPHost: RouteServing {
    public static let maxBodyBytes = 64 * 1024
    static let idempotencyKey = HTTPField.Name("Idempotency-Key")!
    static let traceParent = HTTPField.Name("traceparent")!
    /// Nil until the pipelines' routes are first set: the listener may be up a moment before,
    /// and a request then is answered "starting", not "no such route".
    private let table = Mutex<RouteTable?>(nil)
    /// In a struct, not as the mutex's value itself (see `CommitObserver`).
    private struct ReadinessCheck: Sendable { let problems: @Sendable () async -> [String: String] }
    private let readiness = Mutex<ReadinessCheck?>(nil)
    private let authenticator = RouteAuthenticator()
    let logger: Logger

    public init(logger: Logger) {
        self.logger = logger
    }

    public func replaceRoutes(_ routes: RouteTable) {
        table.withLock { $0 = routes }
    }

    public var routes: RouteTable { table.withLock { $0 } ?? RouteTable() }

    /// What `/readyz` reports: the problems that keep the daemon from being ready.
    public func setReadiness(_ problems: @escaping @Sendable () async -> [String: String]) {
        readiness.withLock { $0 = ReadinessCheck(problems: problems) }
    }

    /// The Hummingbird application; a `Service` to run in the daemon's service group.
    public func application(host: String, port: Int, onRunning: @escaping @Sendable (Int) async -> Void = { _ in })
        -> some Service
    {
        Self.application(responder: Responder(host: self), serverName: "pushpipe", host: host, port: port, logger: logger, onRunning: onRunning)
    }

    /// A Hummingbird server on `host:port` that reports the port it got (port 0 picks one).
    static func application<Responder: HTTPResponder>(responder: Responder, serverName: String, host: String, port: Int, logger: Logger,
                                                      onRunning: @escaping @Sendable (Int) async -> Void) -> some Service
        where Responder.Context == BasicRequestContext
    {
        let application = Application(
            responder: responder,
            configuration: ApplicationConfiguration(address: .hostname(host, port: port), serverName: serverName),
            onServerRunning: { channel in await onRunning(channel.localAddress?.port ?? port) },
            logger: logger
        )
        // Handlers on the loops that read their requests (the application's group is the singleton).
        return ExecutorPreferringService(inner: application, executor: EventLoopGroupTaskExecutor.singleton)
    }

    struct Responder: HTTPResponder {
        let host: HTTPHost

        func respond(to request: Request, context: BasicRequestContext) async throws -> Response {
            do {
                let answer = try await host.handle(request)
                var response = HTTPHost.response(status: answer.status, body: answer.body)
                for (name, value) in answer.headers {
                    if let field = HTTPField.Name(name) { response.headers[field] = value }
                }
                return response
            } catch {
                guard let refusal = HTTPHost.refusal(error) else {
                    host.logger.error("route failed", metadata: ["path": .string(request.uri.path), "error": .string("\(error)")])
                    return HTTPHost.response(status: 500, body: RouteError(500, "internal error").body)
                }
                var response = HTTPHost.response(status: refusal.status, body: refusal.body)
                if refusal.status == 503 { response.headers[.retryAfter] = "1" }
                return response
            }
        }
    }

    /// The answer to a request that failed for a reason its caller can act on. A pipeline that
    /// stops and a store that does not answer kept nothing of the request: its sender sends it
    /// again (503, `Retry-After`), to this daemon once it is back or to another.
    static func refusal(_ error: any Error) -> RouteError? {
        switch error {
        case let error as RouteError: error
        case let stopping as PipelineStopping: RouteError(503, stopping.description)
        case _ where StoreAvailability.meansAway(error): RouteError(503, "the store does not answer; nothing was stored, try again")
        default: nil
        }
    }

    func handle(_ request: Request) async throws -> RouteResponse {
        let method = request.method.rawValue
        let path = request.uri.path
        if path == "/healthz" && (method == "GET" || method == "HEAD") { return RouteResponse(["status": "ok"]) }
        if path == "/readyz" && (method == "GET" || method == "HEAD") {
            let (status, body) = Health.readiness(await readiness.withLock { $0 }?.problems() ?? ["pipelines": "starting"], withReasons: false)
            return RouteResponse(status: status, body)
        }
        guard let routes = table.withLock({ $0 }) else { throw RouteError(503, "starting: the pipelines' routes are not up yet, try again", field: nil) }
        let entry: RouteTable.Entry
        let parameters: [String: String]
        switch routes.lookup(method: method, path: path) {
        case .notFound:
            throw RouteError.notFound("no route for \(path)", field: "path")
        case .methodNotAllowed(let allowed):
            throw RouteError(405, "method \(method) not allowed here; allowed: \(allowed.joined(separator: ", "))", field: "method")
        case .found(let found, let foundParameters):
            entry = found
            parameters = foundParameters
        }
        let user = try await authenticator.authenticate(entry.route.authentication, authorization: request.headers[.authorization])
        let body = try await Self.parseBody(request)
        var query: [String: String] = [:]
        for (key, value) in request.uri.queryParameters { query[String(key)] = String(value).removingPercentEncoding ?? String(value) }
        let routeRequest = RouteRequest(method: method, path: path, parameters: parameters, query: query, body: body, authenticatedUser: user,
                                        principal: RouteAuthenticator.principal(entry.route.authentication, user: user),
                                        idempotencyKey: request.headers[HTTPHost.idempotencyKey],
                                        // A W3C traceparent is 55 characters; anything much longer is not one.
                                        traceParent: request.headers[HTTPHost.traceParent].flatMap { $0.utf8.count <= 128 ? $0 : nil })
        return try await entry.route.handler(routeRequest, entry.context)
    }

    /// Size limit, content type and JSON syntax are checked here so no stage ever sees a bad body.
    static func parseBody(_ request: Request) async throws -> JSON? {
        if let length = request.headers[.contentLength].flatMap(Int.init), length > maxBodyBytes {
            throw RouteError(413, "request body is larger than \(maxBodyBytes) bytes", field: "body")
        }
        let buffer: ByteBuffer
        do {
            buffer = try await request.body.collect(upTo: maxBodyBytes)
        } catch {
            throw RouteError(413, "request body is larger than \(maxBodyBytes) bytes", field: "body")
        }
        guard buffer.readableBytes > 0 else { return nil }
        let contentType = request.headers[.contentType]?.lowercased() ?? ""
        guard contentType.hasPrefix("application/json") || contentType.hasPrefix("application/") && contentType.contains("+json") else {
            throw RouteError(415, "content type must be application/json", field: "content-type")
        }
        let json: JSON
        do {
            json = try JSON.parse(Data(buffer.readableBytesView))
        } catch {
            throw RouteError.badRequest("\(error)", field: "body")
        }
        guard case .object = json else {
            throw RouteError.unprocessable("request body must be a JSON object, found \(json.typeName)", field: "body")
        }
        return json
    }

    static func response(status: Int, body: JSON) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "application/json"
        return Response(status: .init(code: status), headers: headers, body: .init(byteBuffer: ByteBuffer(data: body.serialized())))
    }
}
