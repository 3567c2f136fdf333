import Testing

@testable import PushPipeStages

@Suite struct TemplateTextTests {
    @Test(arguments: [
        ("short", 100, "short"),
        (String(repeating: "a", count: 100), 100, String(repeating: "a", count: 100)),
        (String(repeating: "a", count: 101), 100, String(repeating: "a", count: 100) + "..."),
        ("😀😀😀", 2, "😀😀..."),
        ("e\u{301}e\u{301}e\u{301}", 2, "e\u{301}e\u{301}..."),
        ("👨‍👩‍👧‍👦 family", 1, "👨‍👩‍👧‍👦..."),
    ])
    func truncatesByCharacters(_ text: String, _ limit: Int, _ expected: String) {
        #expect(TemplateText.truncate(text, to: limit) == expected)
        #expect((TemplateText(value: text).transform("truncate\(limit)") as? TemplateText)?.value == expected)
    }

    @Test func otherTransformsStillWork() {
        #expect(TemplateText(value: "Sven").transform("uppercased") as? String == "SVEN")
        #expect(TemplateText(value: "Sven").transform("nonsense") == nil)
    }
}
