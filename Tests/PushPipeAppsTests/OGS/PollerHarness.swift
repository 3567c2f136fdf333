import Logging
import PushPipeCore
import PushPipeSQLite
import PushPipeStages
import PushPipeTesting
import Testing

@testable import PushPipeApps

/// An `ogs.poller` as a pipeline file declares it, polling an OGS stand-in for users registered
/// on a SQLite store: what the poller's tests share, so each shows only what it checks.
enum PollerHarness {
    /// Runs the poller while `body` runs, then stops it; returns it with its store (open: the
    /// caller reads the poller's state, then closes the store).
    static func run(
        against ogs: OGSStandIn,
        interval: Int,
        users: [String],
        in directory: TemporaryDirectory,
        while body: @Sendable (OGSPoller) async throws -> Void
    ) async throws -> (poller: OGSPoller, store: SQLiteStore) {
        let file = try directory.write(
            "pipeline.yaml",
            """
            pipeline: turns
            sources: [{type: ogs.poller, base_url: "\(ogs.baseURL)", interval: \(interval), check_path: ""}]
            renderer: {type: json.template, payload: {}}
            transport: {type: stdout}
            """
        )
        let result = await ConfigLoader(builtins: BuiltinStages.all + AppStages.all, interpolation: EnvironmentInterpolation(environment: [:]))
            .load(pipelineFiles: [file], pluginsDirectory: nil)
        let poller = try #require(result.pipelines.first?.sources.first?.stage as? OGSPoller)
        let store = try SQLiteStore(path: directory.file("state.sqlite"))
        for user in users {
            try await store.pipeline("turns").register(
                DeviceToken(user: user, kind: "device", value: String(repeating: "a", count: 64 - user.count) + user),
                environment: nil,
                replace: false
            )
        }
        let context = StageContext(pipeline: "turns", stage: "sources[0]", store: store, logger: Logger(label: "ogs"), mode: .live)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await poller.run(into: DiscardingSink(), context: context) }
            defer { group.cancelAll() }
            try await body(poller)
        }
        return (poller, store)
    }

    /// Waits (bounded, generously: a loaded machine) until `condition` holds.
    static func waitUntil(_ what: String, timeout: Duration = .seconds(120), _ condition: @escaping @Sendable () -> Bool) async throws {
        try await eventually(what, timeout: timeout) { condition() }
    }

    /// Takes the events the poller emits and completes them (none is expected: no game is the user's turn).
    struct DiscardingSink: EventSink {
        func submit(_ event: Event) async throws {
            await event.onComplete?(EventReport(eventID: event.id, pipeline: event.pipeline, user: nil, status: .delivered))
        }
        func submitAndWait(_ event: Event) async throws -> EventReport {
            EventReport(eventID: event.id, pipeline: event.pipeline, user: nil, status: .delivered)
        }
    }
}
