import Foundation
import PushPipeTesting
import Testing

/// The OGS turn notifications (`pipelines/ogs-turns.yaml`) end to end.
@Suite struct OGSFlowTests {
    typealias H = OGSFlowHarness

    @Test func yourTurnIsNotifiedOnceConsolidatedAndAgainOnlyForNewMoves() async throws {
        try await H.with { harness in
            let t0 = H.nowMilliseconds - 600_000
            harness.ogs.setGames(H.player, [H.game(101, "Alpha", yourTurn: true, lastMove: t0), H.game(102, "Beta", yourTurn: false, lastMove: t0)])
            try await harness.daemon { daemon, client in
                // A new registration is checked right away, not after the interval.
                let registered = try await client.request("POST", "/register", json: ["user_id": .int(H.player), "device_token": .string(H.token)])
                #expect(registered.status == 200)
                let first = try #require(try await harness.apns.waitForRequests(1).first)
                #expect(first.rejection == nil)
                #expect(first.body?["aps"]?["alert"]?["body"] == "It's your turn in: Alpha", "the opponent's turn in Beta is not mentioned")
                #expect(first.body?["game_id"] == 101)
                #expect(first.body?["aps"]?["badge"] == 1)

                // The same state again: found, but nothing new to send.
                let again = try await client.request("GET", "/check/\(H.player)")
                #expect(again.body?["found"]?.arrayValue?.count == 1)
                #expect(again.body?["sent"]?["status"] == "filtered")
                #expect(harness.apns.requests.count == 1)

                // The opponent moves in Beta: it alone is new.
                harness.ogs.move(game: 102, currentPlayer: H.player, lastMove: t0 + 1000)
                _ = try await client.request("GET", "/check/\(H.player)")
                let second = try await harness.apns.waitForRequests(2)[1]
                #expect(second.body?["aps"]?["alert"]?["body"] == "It's your turn in: Beta")
                #expect(second.body?["aps"]?["badge"] == 2, "badge: games waiting")

                // Two new moves: ONE notification, pointing at the newest.
                harness.ogs.move(game: 101, currentPlayer: H.player, lastMove: t0 + 2000)
                harness.ogs.move(game: 102, currentPlayer: H.player, lastMove: t0 + 3000)
                let check = try await client.request("GET", "/check/\(H.player)")
                #expect(check.body?["sent"]?["status"] == "delivered")
                let third = try await harness.apns.waitForRequests(3)[2]
                #expect(harness.apns.requests.count == 3)
                #expect(third.body?["aps"]?["alert"]?["body"] == "It's your turn in 2 games")
                #expect(third.body?["game_id"] == 102)
                #expect(third.body?["game_ids"] == [102, 101])
                #expect(third.body?["web_url"] == "https://online-go.com/game/102")
                #expect(third.body?["app_url"] == "ogs://game/102")

                try await expectDiagnosticsShape(client: client)
                daemon.signal(SIGTERM)
                #expect(try await daemon.waitForExit() == 0)
            }
            // After a restart a check finds the same games and sends nothing.
            try await harness.daemon { daemon, client in
                let check = try await client.request("GET", "/check/\(H.player)")
                #expect(check.body?["sent"]?["status"] == "filtered")
                #expect(harness.apns.requests.count == 3, "nothing is sent twice across a restart")
            }
        }
    }

    func expectDiagnosticsShape(client: HTTPTestClient) async throws {
        let response = try await client.request("GET", "/diagnostics/\(H.player)")
        #expect(response.status == 200)
        let body = try #require(response.body)
        #expect(body["user_id"] == .string(String(H.player)))
        #expect(body["device_token_registered"] == true)
        #expect(body["device_token_preview"] == .string(String(H.token.prefix(16)) + "..."))
        let nowMilliseconds = Double(H.nowMilliseconds)
        let notified = try #require(body["last_notification_time"]?.doubleValue)
        #expect(abs(notified - nowMilliseconds) < 120_000, "last_notification_time is in milliseconds")
        let checked = try #require(body["last_server_check_time"]?.doubleValue)
        #expect(abs(checked - nowMilliseconds / 1000) < 120, "last_server_check_time is in seconds")
        #expect(body["server_check_interval"] == "3600s")
        #expect(body["total_active_games"] == 2)
        let games = try #require(body["monitored_games"]?.arrayValue)
        #expect(games.count == 2)
        let alpha = try #require(games.first { $0["game_id"] == 101 })
        #expect(alpha["game_name"] == "Alpha")
        #expect(alpha["current_player"] == .int(H.player))
        #expect(alpha["is_your_turn"] == true)
        #expect(alpha["last_move_timestamp"]?.intValue != nil)
        #expect(try await client.request("GET", "/diagnostics/999").status == 404)
    }

    @Test func aMoveBetweenFetchAndSendIsNotLost() async throws {
        try await H.with { harness in
            harness.ogs.setGames(H.player, [H.game(201, "Gamma", yourTurn: true, lastMove: H.nowMilliseconds - 60_000)])
            // APNs is slow to accept the first notification...
            harness.apns.script(.delayed(.seconds(1.5), .accept))
            try await harness.daemon { daemon, client in
                _ = try await client.request("POST", "/register", json: ["user_id": .string(String(H.player)), "device_token": .string(H.token)])
                try await harness.apns.waitForRequests(1)
                // ...and meanwhile the player moved and the opponent answered: a move made after
                // the fetch, but before the send completed. Wall-clock "last notification time"
                // would be later than this move and hide it forever.
                harness.ogs.move(game: 201, currentPlayer: H.player, lastMove: H.nowMilliseconds)
                // The first notification is accepted now, and its watermark written.
                try await eventually("the first notification's watermark") { try await harness.watermarks() == 1 }
                let check = try await client.request("GET", "/check/\(H.player)")
                #expect(check.body?["sent"]?["status"] == "delivered", "\(check.text)")
                #expect(harness.apns.requests.count == 2)
            }
        }
    }

    @Test(arguments: [
        OGSStandIn.Behavior.status(500), .status(503), .malformed, .status(429, retryAfter: 1), .throttled(retryAfter: "inf"),
    ])
    func ogsFailuresAreRecordedAndChangeNothing(_ failure: OGSStandIn.Behavior) async throws {
        try await H.with { harness in
            let healthy: Int64 = 555
            harness.ogs.setGames(H.player, [H.game(301, "Delta", yourTurn: true, lastMove: H.nowMilliseconds)])
            harness.ogs.setGames(
                healthy,
                [
                    OGSStandIn.Game(
                        id: 302,
                        name: "Epsilon",
                        black: healthy,
                        white: 356,
                        currentPlayer: healthy,
                        lastMove: H.nowMilliseconds
                    )
                ]
            )
            harness.ogs.behave(failure, for: H.player)
            try await harness.daemon { daemon, client in
                _ = try await client.request("POST", "/register", json: ["user_id": .int(H.player), "device_token": .string(H.token)])
                let check = try await client.request("GET", "/check/\(H.player)")
                #expect(check.status == 200)
                #expect(check.body?["error"]?.stringValue?.isEmpty == false)
                let diagnostics = try await client.request("GET", "/diagnostics/\(H.player)")
                #expect(diagnostics.body?["last_error"]?["message"]?.stringValue?.isEmpty == false)
                #expect(try await harness.watermarks() == 0)
                #expect(harness.apns.requests.isEmpty)
                // Another user is not stopped by it.
                _ = try await client.request(
                    "POST",
                    "/register",
                    json: ["user_id": .int(healthy), "device_token": .string(String(repeating: "9f", count: 32))]
                )
                let other = try await harness.apns.waitForRequests(1)
                #expect(other.first?.body?["game_id"] == 302)
                // And the failing user is notified once OGS recovers.
                let failedFetches = harness.ogs.requests.filter { $0 == H.player }.count
                harness.ogs.behave(.normal, for: H.player)
                let recovered = try await client.request("GET", "/check/\(H.player)")
                #expect(recovered.body?["sent"]?["status"] == "delivered")
                #expect(try await client.request("GET", "/healthz").status == 200)
                // The admin listener counted the checks, the failure by reason, and the waits a 429 imposed.
                let metrics = try await AdminListenerTests.scrape(HTTPTestClient(port: try await daemon.adminPort()))
                let labels = #"pipeline="ogs-turns",stage="sources[0]""#
                let reason =
                    switch failure {
                    case .status(let code, _): "http_\(code)"
                    case .throttled: "http_429"
                    default: "malformed"
                    }
                // Each fetch OGS failed (at registration, then /check) is one failure of that reason.
                #expect(metrics[#"pushpipe_poller_failures_total{\#(labels),reason="\#(reason)"}"#] == Double(failedFetches))
                #expect((metrics[#"pushpipe_poller_checks_total{\#(labels)}"#] ?? 0) >= 3)
                // A nonsense Retry-After pauses every request for 5 s: the healthy user's check,
                // made right after, waited. (A 1 s pause may be over before the next request.)
                if case .throttled = failure {
                    #expect((metrics[#"pushpipe_poller_rate_limit_waits_total{\#(labels)}"#] ?? 0) >= 1)
                }
            }
        }
    }

    @Test func unregisteredTokenIsPrunedAndNoLongerListed() async throws {
        try await H.with { harness in
            harness.ogs.setGames(H.player, [H.game(401, "Zeta", yourTurn: true, lastMove: H.nowMilliseconds)])
            // Answered once the token was seen listed: registering starts a check at once.
            let listed = Gate()
            harness.apns.script(.held(listed, .reject(status: 410, reason: "Unregistered", timestamp: H.nowMilliseconds + 60_000)))
            try await harness.daemon { daemon, client in
                let registered = try await client.request("POST", "/register", json: ["user_id": .int(H.player), "device_token": .string(H.token)])
                #expect(registered.status == 200)
                #expect(try await client.request("GET", "/users-by-token/\(H.token)").body?["user_ids"] == [.string(String(H.player))])
                listed.open()
                try await harness.apns.waitForRequests(1)
                try await eventually("the dead token to be removed") {
                    try await client.request("GET", "/users-by-token/\(H.token)").body?["user_ids"] == []
                }
                #expect(try await harness.watermarks() == 0, "nothing was delivered: the watermark did not move")
            }
        }
    }

    /// `PUSHPIPE_CA_FILE` reaches the OGS poller too, not only the APNs transport: an OGS
    /// mirror with a private CA would otherwise fail every check with CERTIFICATE_VERIFY_FAILED.
    @Test func anOGSMirrorWithAPrivateCAIsTrustedThroughTheCAFile() async throws {
        try await H.with(privateCA: true) { harness in
            #expect(harness.environment["OGS_API_BASE"]?.hasPrefix("https://") == true)
            harness.ogs.setGames(H.player, [H.game(101, "Alpha", yourTurn: true, lastMove: H.nowMilliseconds - 60_000)])
            try await harness.daemon { _, client in
                #expect(
                    try await client.request("POST", "/register", json: ["user_id": .string(String(H.player)), "device_token": .string(H.token)])
                        .status == 200
                )
                let request = try #require(try await harness.apns.waitForRequests(1).first)
                #expect(request.body?["game_id"] == 101)
                let check = try await client.request("GET", "/check/\(H.player)")
                #expect(check.body?["error"] == nil, "\(check.text)")
                #expect(check.body?["total_active_games"] == 1)
            }
        }
    }

    /// With APNs answering 503 twice, the next checks (every second) must not emit the same
    /// game again while its delivery is in backoff, or the player would get it twice.
    @Test func aMoveInBackoffIsNotSentAgainByTheNextChecks() async throws {
        try await H.with(environment: ["CHECK_INTERVAL_SECONDS": "1"]) { harness in
            harness.apns.script(.reject(status: 503, reason: "ServiceUnavailable"), .reject(status: 503, reason: "ServiceUnavailable"))
            harness.ogs.setGames(H.player, [H.game(101, "Alpha", yourTurn: true, lastMove: H.nowMilliseconds - 60_000)])
            try await harness.daemon { _, client in
                #expect(
                    try await client.request("POST", "/register", json: ["user_id": .int(H.player), "device_token": .string(H.token)]).status == 200
                )
                let requests = try await harness.apns.waitForRequests(3)
                #expect(requests[2].rejection == nil, "delivered at the third attempt")
                // Three more checks after the delivery: none sends the move again.
                let checked = harness.ogs.requests.count
                _ = try await harness.ogs.waitForRequests(checked + 3)
                #expect(harness.apns.requests.count == 3, "one notification, tried three times, sent once")
            }
        }
    }
}
