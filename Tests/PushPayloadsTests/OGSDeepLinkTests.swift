import Foundation
import PushPayloads
import Testing

@Suite struct OGSDeepLinkTests {
    @Test(arguments: [
        ("ogs://game/12345678", "https://online-go.com/game/12345678"),
        ("ogs://game/1", "https://online-go.com/game/1"),
        ("https://online-go.com/game/12345678", "https://online-go.com/game/12345678"),
        ("https://online-go.com/", "https://online-go.com/"),
        ("https://online-go.com/player/1783478", "https://online-go.com/player/1783478"),
        ("https://ONLINE-GO.com/game/5", "https://ONLINE-GO.com/game/5"),
        ("https://online-go.com:443/game/5", "https://online-go.com:443/game/5"),
    ])
    func accepted(_ input: String, _ expected: String) {
        #expect(OGSDeepLink.route(input)?.absoluteString == expected)
    }

    @Test(arguments: [
        "ogs://game/../x", "ogs://game/12a", "ogs://game/", "ogs://game/-1", "ogs://game/12/moves", "ogs://player/5",
        "ogs://game/1234567890123", "OGS://game/5", "http://online-go.com/game/5", "https://evil.com/game/5",
        "https://online-go.com.evil.com/game/5", "https://online-go.com@evil.com/", "https://user:pass@online-go.com/",
        "https://online-go.com:8443/game/5", "https://online-go.com/../../etc", "https://online-go.com/%2e%2e/x",
        "javascript:alert(1)", "file:///etc/passwd", "", "https://online-go.com/game/5 ", "//online-go.com/game/5",
        "https://online-go.com\\@evil.com", "ogs://game/\u{0661}\u{0662}",
    ])
    func rejected(_ input: String) {
        #expect(OGSDeepLink.route(input) == nil, "\(input) must not route")
    }

    @Test func overLongInputIsRejected() {
        #expect(OGSDeepLink.route("https://online-go.com/" + String(repeating: "a", count: 3000)) == nil)
    }

    @Test func tapPrefersTheAppURLAndFallsBackToTheWebURL() {
        let both = OGSTurnNotification(webURL: "https://online-go.com/game/2", appURL: "ogs://game/1", action: "open_game")
        #expect(both.destination?.absoluteString == "https://online-go.com/game/1")
        let badApp = OGSTurnNotification(webURL: "https://online-go.com/game/2", appURL: "ogs://evil", action: "open_game")
        #expect(badApp.destination?.absoluteString == "https://online-go.com/game/2")
        let nothing = OGSTurnNotification(webURL: "https://evil.com", appURL: nil, action: "open_game")
        #expect(nothing.destination == nil)
    }
}
