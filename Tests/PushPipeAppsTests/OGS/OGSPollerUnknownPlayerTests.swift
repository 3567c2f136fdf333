import PushPipeCore
import PushPipeStages
import PushPipeTesting
import Testing

@testable import PushPipeApps

/// Anyone can register made-up OGS ids on the anonymous register route, and each one would
/// cost a request at every check until OGS answers 429 for everyone. So an id OGS has no
/// player for (404) is asked about again only after `unknown_player_interval`, while the real
/// players are checked at the normal rate.
@Suite struct OGSPollerUnknownPlayerTests {
    @Test func anIdOGSHasNoPlayerForIsNotPolledAtTheNormalRate() async throws {
        let directory = try TemporaryDirectory("ogs-unknown")
        defer { directory.remove() }
        let ogs = try await OGSStandIn.start()
        try await withCleanup(
            {
                // Player 1 exists; 99 and 98 are made up: OGS answers 404 for them.
                ogs.behave(.status(404), for: 99)
                ogs.behave(.status(404), for: 98)
                let (poller, store) = try await PollerHarness.run(against: ogs, interval: 1, users: ["1", "98", "99"], in: directory) { running in
                    // Eight checks of the real player: eight intervals. Backing off 1, 2, 4
                    // intervals, a made-up id was asked about at least three times in them.
                    try await PollerHarness.waitUntil("eight checks of the real player") { ogs.requests.count { $0 == 1 } >= 8 }
                    // The made-up id registered again and again on the anonymous route: a
                    // registration must not ask OGS at once, whatever its backoff.
                    for _ in 0..<3 { await running.userRegistered("99") }
                    await running.userRegistered("1")
                    try await PollerHarness.waitUntil("the real player's registration checked") { ogs.requests.count { $0 == 1 } >= 9 }
                    try await PollerHarness.waitUntil("four more checks of the real player") { ogs.requests.count { $0 == 1 } >= 13 }
                }
                #expect(ogs.requests.count { $0 == 99 } == 1, "asked once, then not before unknown_player_interval (6 h)")
                #expect(ogs.requests.count { $0 == 98 } == 1)
                let diagnostics = await poller.diagnostics(for: "99")
                #expect(diagnostics["last_error"]?["message"]?.stringValue?.contains("no player 99") == true, "\(diagnostics)")
                #expect(poller.retryDelay(after: OGSError.noSuchPlayer("99", checkedAgainIn: .seconds(21_600)), failures: 1) == .seconds(21_600))
                #expect(
                    poller.retryDelay(after: OGSError.status(500, retryAfter: nil), failures: 3) == .seconds(4),
                    "other failures back off as before"
                )
                try await store.close()
            },
            cleanup: ogs.stop
        )
    }
}
