import Foundation
import PushPipeCore
import PushPipeSQLite
import PushPipeTesting
import Synchronization
import Testing

/// A kind of route from outside the core registers like a stage type: the pipeline file's
/// schema takes it under `routes:`, its entry serves the routes it declares with their
/// contracts, and what it runs beside them runs and stops with the pipeline.
@Suite struct RouteKindTests {
    /// Made up: `GET <path>/:name` greets, `DELETE <path>/:name` forgets; a counter runs beside them.
    final class Greeter: LongRunningStage, Sendable {
        let running = Mutex(false)
        func run(context: StageContext) async throws {
            running.withLock { $0 = true }
            await untilCancelled()
            running.withLock { $0 = false }
        }
    }

    static let greeter = Greeter()
    static let greetings = RouteAction(
        name: "greetings",
        summary: "Greets by name.",
        schema: Schema([SchemaKey("greeting", .string, default: "hello", "What to say.")])
    ) { json, context in
        let path = json["path"]?.stringValue ?? ""
        let greeting = json["greeting"]?.stringValue ?? "hello"
        let answer = RouteContract(summary: "A greeting.", responses: [200: RouteContract.object(["text": RouteContract.string], required: ["text"])])
        return ServedRoutes(
            routes: [
                RouteDefinition(method: "GET", path: path + "/:name", contract: answer) { request, _ in
                    RouteResponse(["text": .string("\(greeting), \(request.parameters["name"] ?? "")"), "pipeline": .string(context.pipeline)])
                },
                RouteDefinition(method: "DELETE", path: path + "/:name") { _, _ in RouteResponse(["text": "forgotten"]) },
            ],
            service: greeter
        )
    }

    @Test func aRegisteredKindServesItsRoutesBesideItsService() async throws {
        var registry = StageRegistry()
        #expect(registry.register(Self.greetings) == nil)
        #expect(registry.register(Self.greetings)?.name == "greetings", "a name is registered once")
        #expect(registry.routeActions.map(\.name).contains("greetings"))

        let directory = try TemporaryDirectory("route-kind")
        defer { directory.remove() }
        let file = try directory.write(
            "greeter.yaml",
            """
            pipeline: greeter
            routes:
              - {action: greetings, path: /greet, greeting: hi}
              - {action: greetings, path: /hello, greting: hi}
            sources: [{type: idle}]
            renderer: {type: passthrough}
            transport: {type: chirp}
            """
        )
        let loader = ConfigLoader(
            builtins: TokenFormatTests.descriptors + [Self.greetings],
            interpolation: EnvironmentInterpolation(environment: [:])
        )
        let refused = await loader.load(pipelineFiles: [file], pluginsDirectory: nil)
        #expect(refused.diagnostics.map(\.keyPath) == ["routes[1].greting"], "its schema checks its keys: \(refused.diagnostics)")

        let fixed = try directory.write(
            "greeter.yaml",
            String(contentsOfFile: file, encoding: .utf8).replacingOccurrences(of: "greting", with: "greeting")
        )
        let loaded = await loader.load(pipelineFiles: [fixed], pluginsDirectory: nil)
        let definition = try #require(loaded.pipelines.first, "\(loaded.diagnostics)")
        #expect(
            definition.routes.map { "\($0.route.method) \($0.route.path)" } == [
                "GET /greet/:name", "DELETE /greet/:name", "GET /hello/:name", "DELETE /hello/:name",
            ]
        )
        #expect(definition.routes[0].route.contract.summary == "A greeting.")
        let store = try SQLiteStore(path: directory.file("state.sqlite"))
        let answer = try await definition.routes[0].route.handler(
            RouteRequest(method: "GET", path: "/greet/ann", parameters: ["name": "ann"]),
            RouteContext(pipeline: "greeter", store: store, sink: RefusingEventSink())
        )
        #expect(answer.body == ["text": "hi, ann", "pipeline": "greeter"])

        #expect(definition.longRunningStages.map(\.id) == ["routes[0]", "routes[1]"])
        try await definition.withRunningStages(store: store, logger: .init(label: "greeter"), mode: .live) {
            try await eventually("the kind's service runs with the pipeline") { Self.greeter.running.withLock { $0 } }
        }
        try await eventually("and stops with it") { !Self.greeter.running.withLock { $0 } }
        try await store.close()
    }

    /// A route made in code, not read from a file, meets its keys' ranges too.
    @Test func aRouteMadeInCodeMeetsItsRanges() throws {
        let register = try #require(StageRegistry().routeAction(named: "register"))
        let error = #expect(throws: ConfigurationValueError.self) {
            try register.route([
                "action": "register", "path": "/r", "user_field": "u", "token_field": "t", "token_kind": "k", "token_format": "opaque",
                "max_tokens_per_user": 0,
            ])
        }
        #expect(error?.keyPath == "max_tokens_per_user")
        #expect(error?.expected == "1 or more")
    }
}
