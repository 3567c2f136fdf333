import Crypto
import Foundation
import Logging
import NIOHTTP2
import PushPipeCore
import PushPipeSQLite
import PushPipeTesting

@testable import PushPipeStages

/// A pipeline with the real `apns` transport talking to the in-process stand-in, a real
/// SQLite store, and throwaway credentials made for this test.
struct APNsHarness {
    let directory: TemporaryDirectory
    let standIn: APNsStandIn
    let store: SQLiteStore
    var definition: PipelineDefinition

    static let teamID = "TEAM123456"
    static let keyID = "KEY1234567"
    static let bundleID = "com.example.pushpipe"

    /// - Parameters:
    ///   - signingKey: the key pushpipe signs with; defaults to the one the stand-in trusts.
    ///   - maxConnections: one unless a test is about the pool growing, so that tests of one
    ///     connection's streams see one connection.
    static func make(
        timeout: String = "10s",
        signingKey: P256.Signing.PrivateKey? = nil,
        renderer: String? = nil,
        attempts: Int = 3,
        maxStreams: Int = 100,
        serverStreamLimit: Int = 100,
        connections: Int = 1,
        maxConnections: Int = 1,
        idleTimeout: String = "60s"
    ) async throws -> APNsHarness {
        let directory = try TemporaryDirectory("apns")
        let (standIn, _) = try await APNsStandIn.startWithThrowawayCredentials(
            in: directory,
            teamID: teamID,
            keyID: keyID,
            signingKey: signingKey,
            maxConcurrentStreams: serverStreamLimit
        )
        let pipeline = """
            pipeline: apns-test
            sources:
              - {type: http.event, path: /events}
            renderer:
            \(renderer ?? "  {type: apns.alert, title: \"{{title}}\", body: \"{{text}}\", custom: {n: {$from: n}}}")
            transport:
              type: apns
              team_id: \(teamID)
              key_id: \(keyID)
              key_path: \(directory.file("AuthKey.p8"))
              bundle_id: \(bundleID)
              base_url: \(standIn.baseURL)
              ca_file: \(directory.file("ca.pem"))
              timeout: \(timeout)
              max_streams: \(maxStreams)
              connections: \(connections)
              max_connections: \(maxConnections)
              idle_timeout: \(idleTimeout)
            delivery: {attempts: \(attempts), backoff: 10ms, max_backoff: 50ms}
            """
        let file = try directory.write("apns-test.yaml", pipeline)
        let loader = ConfigLoader(builtins: BuiltinStages.all, interpolation: EnvironmentInterpolation(environment: [:]))
        let result = await loader.load(pipelineFiles: [file], pluginsDirectory: nil)
        guard let definition = result.pipelines.first else { throw ConfigurationError(result.diagnostics) }
        let store = try SQLiteStore(path: directory.file("state.sqlite"))
        return APNsHarness(directory: directory, standIn: standIn, store: store, definition: definition)
    }

    /// Rebuilds the `apns` transport with changed configuration (another server, another CA)
    /// or a lower stream-id limit, as if the pipeline file had said so.
    mutating func reconfigureTransport(
        lastUsableStreamID: Int32 = Int32(HTTP2StreamHandler.defaultLastUsableStreamID),
        _ change: (inout APNsTransport.Configuration) -> Void = { _ in }
    ) throws {
        guard let transport = definition.transport.stage as? APNsTransport else { throw ConfigurationValueError(keyPath: "transport", "not apns") }
        var configuration = transport.configuration
        change(&configuration)
        definition.transport.stage = try APNsTransport(
            configuration: configuration,
            context: StageBuildContext(pipeline: definition.name, stage: "transport"),
            lastUsableStreamID: HTTP2StreamID(lastUsableStreamID)
        )
    }

    func register(_ user: String, _ token: String, kind: String = "device") async throws {
        try await store.pipeline(definition.name).register(DeviceToken(user: user, kind: kind, value: token), environment: nil, replace: false)
    }

    /// Runs `body` with the pipeline's stages running, as the daemon would.
    func run<T: Sendable>(_ body: @Sendable (EventProcessor) async throws -> T) async throws -> T {
        let processor = EventProcessor(definition: definition, store: store, logger: Logger(label: "apns-test"), mode: .live)
        return try await definition.withRunningStages(store: store, logger: Logger(label: "apns-test"), mode: .live) { try await body(processor) }
    }

    func event(user: String? = "alice", _ body: JSON = ["title": "Hi", "text": "there", "n": 1]) -> Event {
        Event(pipeline: definition.name, user: user, body: body)
    }

    /// One event for each of `user0`...: all in flight at once.
    func processConcurrently(users: Int) async throws -> [EventReport] {
        try await run { processor in await processConcurrently(processor, users: users) }
    }

    func processConcurrently(_ processor: EventProcessor, users: Int) async -> [EventReport] {
        await withTaskGroup(of: EventReport.self) { group in
            for index in 0..<users { group.addTask { await processor.process(event(user: "user\(index)")) } }
            return await group.reduce(into: [EventReport]()) { $0.append($1) }
        }
    }

    func close() async {
        try? await store.close()
        await standIn.stop()
        directory.remove()
    }

    static let token = String(repeating: "ab", count: 32)
    static let longToken = String(repeating: "cd", count: 80)
}
