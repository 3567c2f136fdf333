import ArgumentParser
import Foundation
import PushPipeTesting

/// The OGS stand-in as its own process, so the poller's CPU and memory are measured alone.
struct OGSStandInCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "ogs-standin", abstract: "Serve player documents from memory on 127.0.0.1.")

    @Option(help: "Players (ids 1...N).") var users = 10_000
    @Option(help: "Active games per player.") var games = 5
    @Option(help: "Exit after this many seconds (bounded).") var seconds = 300.0

    func run() async throws {
        let standIn = try await OGSStandIn.start()
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        for player in 1...Int64(users) {
            // Two of each player's games wait for them; the others for the opponent.
            standIn.setGames(
                player,
                (0..<Int64(games)).map { index in
                    OGSStandIn.Game(
                        id: player * 100 + index,
                        name: "Game \(index) of \(player)",
                        black: player,
                        white: 9_000_000 + index,
                        currentPlayer: index < 2 ? player : 9_000_000 + index,
                        lastMove: now - index * 60_000
                    )
                }
            )
        }
        FileHandle.standardOutput.write(Data("listening \(standIn.port)\n".utf8))
        try await Task.sleep(for: .seconds(seconds))
        await standIn.stop()
    }
}
