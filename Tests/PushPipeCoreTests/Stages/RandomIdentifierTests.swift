import Foundation
import PushPipeCore
import Testing

@Suite struct RandomIdentifierTests {
    @Test func uuidsAreVersion4InLowerCase() throws {
        var seen = Set<String>()
        for _ in 0..<1000 {
            let text = RandomIdentifier.uuid()
            let parsed = try #require(UUID(uuidString: text), "\(text) is not a UUID")
            #expect(parsed.uuidString.lowercased() == text)
            let characters = Array(text)
            #expect(characters[14] == "4")
            #expect("89ab".contains(characters[19]))
            seen.insert(text)
        }
        #expect(seen.count == 1000)
    }

    @Test func eventIDsAre24HexDigits() {
        let ids = (0..<1000).map { _ in Event.makeID() }
        for id in ids { #expect(id.count == 24 && id.allSatisfy { "0123456789abcdef".contains($0) }, "\(id)") }
        #expect(Set(ids).count == 1000)
    }
}
