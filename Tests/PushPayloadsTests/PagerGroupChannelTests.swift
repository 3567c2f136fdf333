import Foundation
import PushPayloads
import Testing

@Suite struct PagerGroupChannelTests {
    @Test func theChannelRoutesAnswerDecodes() throws {
        let answer = Data(#"{"status": "created", "group": "ops", "channel_id": "T3BzR3JvdXBDaGFubmVsMDE="}"#.utf8)
        let channel = try #require(PagerGroupChannel(json: answer))
        #expect(channel == PagerGroupChannel(group: "ops", channelID: "T3BzR3JvdXBDaGFubmVsMDE="))
        #expect(channel.attributes(recipient: "alice") == PagerActivityAttributes(recipient: "alice", group: "ops"))
    }

    @Test(arguments: [
        "{}", #"{"group": "ops"}"#, #"{"group": "ops", "channel_id": ""}"#, #"{"group": "ops", "channel_id": 5}"#, "not json",
    ])
    func answersWithoutAChannelAreRejected(_ json: String) {
        #expect(PagerGroupChannel(json: Data(json.utf8)) == nil)
    }

    /// Activities started before groups existed have no `group` in their attributes.
    @Test func attributesWithoutAGroupStillDecode() throws {
        let attributes = try JSONDecoder().decode(PagerActivityAttributes.self, from: Data(#"{"recipient": "alice"}"#.utf8))
        #expect(attributes == PagerActivityAttributes(recipient: "alice"))
    }
}
