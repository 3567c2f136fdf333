import Foundation
import PushPipeTesting
import Synchronization
import Testing

/// On the shipped OGS pipeline: a player with two phones, one of which APNs answers 500 at
/// every attempt. The watermark waits for that phone, and the checks meanwhile must not send
/// the turn again to the other one.
@Suite struct OGSPerDeviceFlowTests {
    typealias H = OGSFlowHarness

    static let failingToken = String(repeating: "4e", count: 32)

    @Test func aPhoneThatGotTheTurnIsNotSentItAgainWhileAnotherIsRetried() async throws {
        try await H.with { harness in
            // The shipped pipeline with retries a test can wait for: 3 attempts, 50 ms apart.
            let pipeline = try String(contentsOfFile: harness.directory.file("pipelines/ogs-turns.yaml"), encoding: .utf8)
            _ = try harness.directory.write("pipelines/ogs-turns.yaml", pipeline + "\ndelivery: {attempts: 3, backoff: 50ms, max_backoff: 50ms}\n")
            let failing = Mutex(true)
            harness.apns.answer { request in
                request.token == Self.failingToken && failing.withLock { $0 } ? .reject(status: 500, reason: "InternalServerError") : .accept
            }
            @Sendable func sent(to token: String) -> Int { harness.apns.requests.filter { $0.token == token }.count }
            harness.ogs.setGames(H.player, [H.game(101, "Alpha", yourTurn: false, lastMove: H.nowMilliseconds - 60_000)])
            try await harness.daemon { _, client in
                for token in [H.token, Self.failingToken] {
                    #expect(
                        try await client.request("POST", "/register", json: ["user_id": .int(H.player), "device_token": .string(token)]).status == 200
                    )
                }
                // The checks each registration started found the opponent's turn: nothing to send.
                _ = try await harness.ogs.waitForRequests(2)
                harness.ogs.move(game: 101, currentPlayer: H.player, lastMove: H.nowMilliseconds)

                let first = try await client.request("GET", "/check/\(H.player)")
                #expect(first.body?["sent"]?["status"] == "partial", "\(first.text)")
                #expect(sent(to: H.token) == 1 && sent(to: Self.failingToken) == 3)

                for check in 2...4 {
                    let again = try await client.request("GET", "/check/\(H.player)")
                    #expect(again.body?["sent"]?["status"] == "failed", "check \(check): only the failing phone was tried: \(again.text)")
                    #expect(sent(to: H.token) == 1, "check \(check): the phone that got the turn does not get it again")
                    #expect(sent(to: Self.failingToken) == 3 * check, "check \(check): the failing phone is tried again, 3 times")
                }

                // It recovers: it gets the turn once, and the watermark moves for both.
                failing.withLock { $0 = false }
                let recovered = try await client.request("GET", "/check/\(H.player)")
                #expect(recovered.body?["sent"]?["status"] == "delivered", "\(recovered.text)")
                let settled = try await client.request("GET", "/check/\(H.player)")
                #expect(settled.body?["sent"]?["status"] == "filtered", "\(settled.text)")
                #expect(sent(to: H.token) == 1 && sent(to: Self.failingToken) == 13)
                let accepted = harness.apns.requests.filter { $0.token == Self.failingToken }.last
                #expect(accepted?.body?["game_id"] == 101)
            }
        }
    }
}
