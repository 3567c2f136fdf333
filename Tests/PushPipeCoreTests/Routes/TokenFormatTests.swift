import Foundation
import Logging
import PushPipeCore
import PushPipeSQLite
import PushPipeTesting
import Testing

/// A provider the core has never heard of brings its token format with its transport: the
/// core's registry takes it, a register route stores and refuses its tokens, the pipeline's
/// schema lists it, and logs mask its tokens as it says.
@Suite struct TokenFormatTests {
    /// Made up: tokens are `chirp:` and 6 to 40 digits; its reasons are numeric codes.
    struct ChirpTokenFormat: TokenFormat {
        var name: String { "chirp" }
        var summary: String { "Chirp tokens: `chirp:` and 6 to 40 digits." }
        var schema: JSON { ["type": "string", "pattern": "^chirp:[0-9]{6,40}$"] }

        func registration(_ value: JSON?, field: String) throws -> (token: String, scope: String?) {
            let token = try text(value, field: field)
            let digits = token.dropFirst("chirp:".count)
            guard token.hasPrefix("chirp:"), (6...40).contains(digits.count), digits.allSatisfy(\.isASCII), digits.allSatisfy(\.isNumber) else {
                throw RouteError.badRequest("'\(field)' must be chirp: and 6 to 40 digits", field: field)
            }
            return (token, nil)
        }

        /// Every Chirp token starts `chirp:`: the digits after it are what tells two apart.
        func mask(_ token: String) -> String? {
            token.hasPrefix("chirp:") ? "chirp:" + TokenMask.mask(String(token.dropFirst(6)), keep: 3) : nil
        }
    }

    struct ChirpTransport: Transport {
        struct Configuration: StageConfiguration {
            static let schema = Schema([])
        }

        func prepare(_ notification: RenderedNotification, context: StageContext) throws -> OutgoingRequest {
            OutgoingRequest(url: "https://chirp.invalid/send", headers: [], sending: notification)
        }

        /// Chirp answers with a numeric code; the transport reads it once, into the reason.
        func send(_ request: OutgoingRequest, context: StageContext) async -> TransportOutcome {
            .dropToken(reason: ProviderReason(code: "80300007", "Chirp does not know this token"), since: nil)
        }
    }

    /// A source that only waits, and a renderer that sends the event's body to each of the
    /// user's `chirp` tokens: the core has no stage of its own.
    struct Idle: Source {
        struct Configuration: StageConfiguration { static let schema = Schema([]) }
        func run(into sink: any EventSink, context: StageContext) async throws { await untilCancelled() }
    }

    struct Passthrough: Renderer {
        struct Configuration: StageConfiguration { static let schema = Schema([]) }
        func render(_ event: Event, context: StageContext) async throws -> [RenderedNotification] {
            try await context.registrations.tokens(user: event.user, kind: "chirp").map { RenderedNotification(token: $0, payload: event.body) }
        }
    }

    static let descriptors = [
        StageDescriptor.transport("chirp", "Sends to Chirp.", ChirpTransport.Configuration.self) { _, _ in ChirpTransport() }
            .describing(tokens: [ChirpTokenFormat()]),
        StageDescriptor.source("idle", "Waits.", Idle.Configuration.self) { _, _ in Idle() },
        StageDescriptor.renderer("passthrough", "The event's body.", Passthrough.Configuration.self) { _, _ in Passthrough() },
    ]
    static let registry = StageRegistry(descriptors)

    @Test func theCoreAloneKnowsOnlyOpaqueTokens() {
        #expect(StageRegistry().tokenFormats.all.map(\.name) == ["opaque"])
        #expect(Self.registry.tokenFormats.all.map(\.name) == ["chirp", "opaque"])
    }

    @Test func aRegisterRouteStoresTheProvidersTokensAndRefusesOthers() async throws {
        let directory = try TemporaryDirectory("chirp-register")
        defer { directory.remove() }
        let store = try SQLiteStore(path: directory.file("state.sqlite"))
        let route = try #require(Self.registry.routeAction(named: "register")).route([
            "action": "register", "path": "/register", "user_field": "user_id", "token_field": "token", "token_format": "chirp",
            "token_kind": "chirp",
        ])
        let context = RouteContext(pipeline: "chirps", store: store, sink: RefusingEventSink())
        func register(_ token: JSON) async throws -> RouteResponse {
            try await route.handler(RouteRequest(method: "POST", path: "/register", body: ["user_id": "ann", "token": token]), context)
        }
        let answer = try await register(" chirp:12345678 ")
        #expect(answer.body["token_preview"] == "chirp:123…", "masked as the format says")
        #expect(try await store.pipeline("chirps").tokens(user: "ann", kind: "chirp").map(\.value) == ["chirp:12345678"])
        for bad: JSON in ["12345678", "chirp:12", "chirp:12345x78"] {
            let error = await #expect(throws: RouteError.self) { try await register(bad) }
            #expect(error?.field == "token")
        }
        #expect(try await store.pipeline("chirps").tokens(user: "ann", kind: "chirp").count == 1, "a refused token changes nothing")
        try await store.close()
    }

    /// The pipeline file's schema lists the provider's format, so a format nobody described is
    /// refused where it is written.
    @Test func aPipelineNamesTheProvidersFormatAndNoOther() async throws {
        let directory = try TemporaryDirectory("chirp-pipeline")
        defer { directory.remove() }
        func load(_ format: String) async throws -> ConfigLoader.Result {
            let file = try directory.write(
                "chirps-\(format).yaml",
                """
                pipeline: chirps
                routes:
                  - {action: register, path: /register, user_field: user_id, token_field: token, token_kind: chirp, token_format: \(format)}
                sources:
                  - {type: idle}
                renderer: {type: passthrough}
                transport: {type: chirp}
                """
            )
            let loader = ConfigLoader(builtins: Self.descriptors, interpolation: EnvironmentInterpolation(environment: [:]))
            return await loader.load(pipelineFiles: [file], pluginsDirectory: nil)
        }
        let loaded = try await load("chirp")
        #expect(loaded.diagnostics.isEmpty, "\(loaded.diagnostics)")
        let definition = try #require(loaded.pipelines.first)

        // A delivery: the provider's own code is the reason's, and its token is dropped.
        let store = try SQLiteStore(path: directory.file("state.sqlite"))
        let pipeline = store.pipeline(definition.name)
        try await pipeline.register(DeviceToken(user: "ann", kind: "chirp", value: "chirp:12345678"), environment: nil, replace: false)
        let report = await EventProcessor(definition: definition, store: store, logger: Logger(label: "chirp"), mode: .live).process(
            Event(pipeline: definition.name, user: "ann", body: ["text": "hi"])
        )
        #expect(report.deliveries.map(\.outcome) == [.dropToken])
        #expect(report.deliveries.first?.reasonCode == "80300007")
        #expect(report.deliveries.first?.token == "chirp:123…")
        #expect(try await pipeline.tokens(user: "ann", kind: "chirp").isEmpty)
        try await store.close()

        let refused = try await load("hex")
        #expect(refused.pipelines.isEmpty)
        let diagnostic = try #require(refused.diagnostics.first)
        #expect(diagnostic.keyPath == "routes[0].token_format")
        #expect(diagnostic.location.line == 3)
    }
}
