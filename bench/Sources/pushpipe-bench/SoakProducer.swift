import Foundation
import PushPipeCore
import PushPipePostgres
import PushPipeSQLite
import PushPipeTesting

/// What the soaks' ledgers count by.
protocol SoakAccounting: Sendable {
    func nextID(_ prefix: String) -> String
    func nextGame() -> Int64
    func accept(_ id: String)
    /// A send scheduled for `instant` (UNIX seconds).
    func accept(_ id: String, scheduledAt instant: Double)
}

extension SoakAccounting {
    func accept(_ id: String, scheduledAt instant: Double) { accept(id) }
}

/// The soaks' load, at set rates: events posted (accepted on a 202), reply files renamed into
/// the folder as a writer does, OGS games that become the player's turn (accepted as written).
struct SoakProducer {
    var eventRate: Double
    var replyRate: Double
    var moveRate: Double
    let player: Int64
    /// Sends scheduled 2 to 20 s ahead (`soak-scheduled`), and events for digests (`soak-digest`), per second.
    var scheduledRate = 0.0
    var digestRate = 0.0

    /// - Parameter target: the daemon and user of the next event; nil while no daemon is up.
    func run(
        until: ContinuousClock.Instant,
        directory: TemporaryDirectory,
        ogs: OGSStandIn,
        ledger: some SoakAccounting,
        target: () -> (client: HTTPTestClient, user: String)?
    ) async throws {
        let tick = 0.025
        var due = (events: 0.0, replies: 0.0, moves: 0.0)
        var timed = (scheduled: 0.0, digests: 0.0)
        while ContinuousClock.now < until {
            due = (due.events + eventRate * tick, due.replies + replyRate * tick, due.moves + moveRate * tick)
            timed = (timed.scheduled + scheduledRate * tick, timed.digests + digestRate * tick)
            while timed.scheduled >= 1 {
                timed.scheduled -= 1
                guard let (client, user) = target() else { continue }
                let id = ledger.nextID("s")
                let instant = (Date().timeIntervalSince1970 + 2 + Double(id.hashValue.magnitude % 18)).rounded(.down)
                let body: JSON = ["user": .string(user), "id": .string(id), "send_at": .double(instant)]
                if let response = try? await client.request("POST", "/soak/scheduled", json: body, timeout: 5), response.status == 202 {
                    ledger.accept(id, scheduledAt: instant)
                }
            }
            while timed.digests >= 1 {
                timed.digests -= 1
                guard let (client, user) = target() else { continue }
                let id = ledger.nextID("d")
                // A few users and one post: several events share each 5 s digest.
                let body: JSON = ["user": .string("user-\(user.hashValue.magnitude % 4)"), "id": .string(id), "post": "p"]
                if let response = try? await client.request("POST", "/soak/digest", json: body, timeout: 5), response.status == 202 {
                    ledger.accept(id)
                }
            }
            while due.events >= 1 {
                due.events -= 1
                guard let (client, user) = target() else { continue }
                let id = ledger.nextID("e")
                if let response = try? await client.request("POST", "/soak/events", json: ["user": .string(user), "id": .string(id)], timeout: 5),
                    response.status == 202
                {
                    ledger.accept(id)
                }
            }
            while due.replies >= 1 {
                due.replies -= 1
                let id = ledger.nextID("r")
                let staged = try directory.write("staging/\(id).json", #"{"message_id": "\#(id)", "text": "soak reply"}"#)
                try FileManager.default.moveItem(atPath: staged, toPath: directory.file("replies/\(id).json"))
                ledger.accept(id)
            }
            while due.moves >= 1 {
                due.moves -= 1
                let game = ledger.nextGame()
                ogs.addGame(
                    player,
                    OGSStandIn.Game(
                        id: game,
                        name: "g\(game)",
                        black: 356,
                        white: player,
                        currentPlayer: player,
                        lastMove: Int64(Date().timeIntervalSince1970 * 1000)
                    )
                )
                ledger.accept("g\(game)")
            }
            try await Task.sleep(for: .seconds(tick))
        }
    }
}
