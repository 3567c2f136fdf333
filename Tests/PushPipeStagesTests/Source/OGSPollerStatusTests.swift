import Foundation
import Logging
import PushPipeCore
import PushPipeSQLite
@testable import PushPipeStages
import PushPipeTesting
import Testing

/// The poller's per-user status (diagnostics, backoff) covers the users it checks now, not
/// every user it ever checked: a daemon on a shared database sees users come and go.
@Suite struct OGSPollerStatusTests {
    @Test func statusesOfUsersNoLongerCheckedAreForgottenButBackoffsAreKept() async throws {
        let directory = try TemporaryDirectory("ogs-status")
        defer { directory.remove() }
        let ogs = try await OGSStandIn.start()
        try await withCleanup({
            ogs.setGames(1, [])
            ogs.setGames(2, [])
            ogs.behave(.status(500), for: 3)
            let file = try directory.write("pipeline.yaml", """
                pipeline: turns
                sources: [{type: ogs.poller, base_url: "\(ogs.baseURL)", interval: 10, check_path: ""}]
                renderer: {type: json.template, payload: {}}
                transport: {type: stdout}
                """)
            let result = await ConfigLoader(builtins: BuiltinStages.all, interpolation: EnvironmentInterpolation(environment: [:]))
                .load(pipelineFiles: [file], pluginsDirectory: nil)
            let poller = try #require(result.pipelines.first?.sources.first?.stage as? OGSPoller)
            let store = try SQLiteStore(path: directory.file("state.sqlite"))
            for user in ["1", "2", "3"] {
                try await store.register(DeviceToken(user: user, kind: "device", value: String(repeating: "a", count: 63) + user),
                                         pipeline: "turns", environment: nil, replace: false)
            }
            let context = StageContext(pipeline: "turns", stage: "sources[0]", store: store, logger: Logger(label: "ogs"), mode: .live)
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await poller.run(into: DiscardingSink(), context: context) }
                defer { group.cancelAll() }
                try await ogs.waitForRequests(from: [1, 2, 3], after: 0)
                try await waitUntil { poller.statusCount == 3 }
            }
            // Checked a moment ago: all kept.
            poller.forgetStaleStatuses()
            #expect(poller.statusCount == 3)
            // Ten minutes without a check (sixty intervals): 1 and 2 are forgotten; 3 failed
            // and is still backing off (ten seconds), which its entry remembers.
            poller.forgetStaleStatuses(now: Date().addingTimeInterval(601))
            #expect(poller.statusCount == 1)
            #expect(await poller.diagnostics(for: "3")["last_error"] != .null)
            // Once its backoff is over too, it goes.
            poller.forgetStaleStatuses(now: Date().addingTimeInterval(601), monotonicNow: .now + .seconds(3600))
            #expect(poller.statusCount == 0)
            try await store.close()
        }, cleanup: ogs.stop)
    }

    private func waitUntil(_ condition: @escaping @Sendable () -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(20)
        while !condition() {
            guard ContinuousClock.now < deadline else { throw WaitTimedOut("the poller's statuses") }
            try await Task.sleep(for: .milliseconds(10))
        }
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
