import Foundation
import PushPipeStages
import PushPipeTesting
import Testing

@testable import PushPipeApps

/// The poller's per-user status (diagnostics, backoff) covers the users it checks now, not
/// every user it ever checked: a daemon on a shared database sees users come and go.
@Suite struct OGSPollerStatusTests {
    @Test func statusesOfUsersNoLongerCheckedAreForgottenButBackoffsAreKept() async throws {
        let directory = try TemporaryDirectory("ogs-status")
        defer { directory.remove() }
        let ogs = try await OGSStandIn.start()
        try await withCleanup(
            {
                ogs.setGames(1, [])
                ogs.setGames(2, [])
                ogs.behave(.status(500), for: 3)
                let (poller, store) = try await PollerHarness.run(against: ogs, interval: 10, users: ["1", "2", "3"], in: directory) { poller in
                    try await ogs.waitForRequests(from: [1, 2, 3], after: 0)
                    try await PollerHarness.waitUntil("the poller's statuses") { poller.statusCount == 3 }
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
                poller.forgetStaleStatuses(now: Date().addingTimeInterval(601), elapsed: poller.clock.elapsed + .seconds(3600))
                #expect(poller.statusCount == 0)
                try await store.close()
            },
            cleanup: ogs.stop
        )
    }
}
