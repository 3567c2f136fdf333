import Foundation
import PushPipeCore
import PushPipeStages
import Testing

@testable import PushPipeApps

/// The poller builds only what it reads of a player's `/full` document; the result must be
/// the same as from the whole document, and a broken document must still be refused.
@Suite struct OGSPlayerDocumentTests {
    static func fixture() throws -> Data {
        try Data(
            contentsOf: try #require(
                Bundle.module.url(
                    forResource: "ogs-player-full.reconstructed",
                    withExtension: "json",
                    subdirectory: "Fixtures"
                )
            )
        )
    }

    @Test func theSelectedPartsGiveTheSameGamesAsTheWholeDocument() throws {
        let data = try Self.fixture()
        let whole = try JSON.parse(data)
        let selected = try JSON.parse(data, selecting: OGSPlayerDocument.selection)
        #expect(selected["user"] == nil && selected["ladders"] == nil, "what is not read is not built")
        let player = try #require(whole["active_games"]?[0]?["json"]?["clock"]?["current_player"]?.intValue)
        for user in [String(player), "1"] {
            let fromWhole = try OGSPlayerDocument.games(in: whole, user: user, minTimePerMove: 0)
            let fromSelected = try OGSPlayerDocument.games(in: selected, user: user, minTimePerMove: 0)
            #expect(fromSelected.yourTurn == fromWhole.yourTurn)
            #expect(fromSelected.all == fromWhole.all)
        }
        #expect(try OGSPlayerDocument.games(in: selected, user: String(player), minTimePerMove: 0).yourTurn.count == 1)
    }

    @Test(arguments: [
        #"{"user": {"name": "unterminated}, "active_games": []}"#,
        #"{"ladders": [1, 2, {"a": tru}], "active_games": []}"#,
        #"{"ladders": [1, 2,, 3], "active_games": []}"#,
        #"{"active_games": [{"id": 1, "moves": [[1, 2], [3, 4]}]}"#,
        "{\"user\": {\"bio\": \"a\u{01}b\"}, \"active_games\": []}",
        #"{"active_games": []} trailing"#,
        #"{"ratings": {"overall": 01}, "active_games": []}"#,
        #"{"ratings": [1.e3], "active_games": []}"#,
        #"{"ratings": -, "active_games": []}"#,
        #"{"flag": nul, "active_games": []}"#,
        "{\"user\": {\"na\u{01}me\": 1}, \"active_games\": []}",
    ])
    func aBrokenDocumentIsRefusedEvenWhereNothingIsRead(_ text: String) {
        #expect(throws: JSONParseError.self) { try JSON.parse(Data(text.utf8), selecting: OGSPlayerDocument.selection) }
    }

    /// Keys are matched as bytes; an escaped key still matches what it spells.
    @Test func anEscapedKeyIsSelectedByWhatItSpells() throws {
        let text = #"{"act\u0069ve_games": [{"id": 7, "n\u0061me": "x", "skipped": {"a": [1, -2.5e3, true]}}]}"#
        let selected = try JSON.parse(Data(text.utf8), selecting: OGSPlayerDocument.selection)
        #expect(selected == ["active_games": [["id": 7, "name": "x"]]])
    }
}
