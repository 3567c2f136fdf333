import PushPipeCore
import PushPipeStages

/// Reads `GET /api/v1/players/{id}/full` (Tests/PushPipeAppsTests/Fixtures/ogs-player-full.reconstructed.json).
enum OGSPlayerDocument {
    /// The members `games(in:)` reads: a player's document also holds the profile, ratings and
    /// each game's whole state (moves, chat, every clock field), which are skipped unbuilt.
    static let selection: JSONSelection = .members([
        "active_games": .members([
            "id": .everything, "name": .everything, "time_per_move": .everything,
            "black": .members(["id": .everything, "username": .everything]),
            "white": .members(["id": .everything, "username": .everything]),
            "json": .members([
                "game_id": .everything, "game_name": .everything,
                "clock": .members(["current_player": .everything, "last_move": .everything]),
            ]),
        ])
    ])

    /// The games where it is `user`'s turn (for the notification) and every active game (for
    /// diagnostics). "Your turn" is OGS's own REST rule: `json.clock.current_player == user`.
    static func games(in document: JSON, user: String, minTimePerMove: Int) throws -> (yourTurn: [JSON], all: [MonitoredGame]) {
        guard let userID = Int64(user) else { throw OGSError.notAPlayerID(user) }
        guard let active = document["active_games"]?.arrayValue else { throw OGSError.malformed("no active_games list") }
        var yourTurn: [JSON] = []
        var all: [MonitoredGame] = []
        all.reserveCapacity(active.count)
        for game in active {
            guard let gameID = game["id"]?.intValue ?? game["json"]?["game_id"]?.intValue else { continue }
            let clock = game["json"]?["clock"]
            let currentPlayer = clock?["current_player"]?.intValue
            let lastMove = clock?["last_move"]?.intValue ?? 0
            let name = game["name"]?.stringValue ?? game["json"]?["game_name"]?.stringValue ?? "Game \(gameID)"
            let isYourTurn = currentPlayer == userID
            all.append(MonitoredGame(gameID: gameID, lastMove: lastMove, currentPlayer: currentPlayer, isYourTurn: isYourTurn, name: name))
            let timePerMove = game["time_per_move"]?.intValue ?? 0
            guard isYourTurn, timePerMove >= minTimePerMove else { continue }
            let opponent = [game["black"], game["white"]].compactMap { $0 }.first { $0["id"]?.intValue != userID }
            yourTurn.append([
                "game_id": .int(gameID), "game_name": .string(name), "last_move": .int(lastMove), "time_per_move": .int(timePerMove),
                "opponent": ["id": opponent?["id"] ?? .null, "username": opponent?["username"] ?? .null],
            ])
        }
        return (yourTurn, all)
    }

    /// An active game as diagnostics show it. Kept as a struct: every check of every user
    /// stores one per game, and diagnostics, which need the JSON, are rare.
    struct MonitoredGame: Sendable, Equatable {
        var gameID: Int64
        var lastMove: Int64
        var currentPlayer: Int64?
        var isYourTurn: Bool
        var name: String

        var json: JSON {
            [
                "game_id": .int(gameID), "last_move_timestamp": .int(lastMove),
                "current_player": currentPlayer.map(JSON.int) ?? .null, "is_your_turn": .bool(isYourTurn), "game_name": .string(name),
            ]
        }
    }
}
