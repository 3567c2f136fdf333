import Foundation
import PushPipe
@testable import PushPipeStages
import Testing

@Suite struct JSONTemplateTests {
    let event = Event(id: "62505215624257b417055bc4", pipeline: "p", user: "1783478", time: Date(timeIntervalSince1970: 1_758_474_319.701),
                      body: ["game_id": 79504463, "game_name": "Tom & Jerry <3", "last_move": 1758474319701, "ratio": 0.5,
                             "games": [["id": 1], ["id": 2]], "nothing": nil])

    func render(_ template: JSON) throws -> JSON? {
        try JSONTemplate(compiling: template, keyPath: "payload").render(TemplateContext(event: event))
    }

    @Test func referencesKeepJSONTypes() throws {
        let rendered = try render(["id": ["$from": "game_id"], "move": ["$from": "last_move"], "ratio": ["$from": "ratio"],
                                   "second": ["$from": "games[1].id"], "null": ["$from": "nothing"]])
        #expect(rendered == ["id": 79504463, "move": 1758474319701, "ratio": 0.5, "second": 2, "null": nil])
    }

    @Test func missingReferencesAreOmittedOrDefaulted() throws {
        #expect(try render(["a": ["$from": "missing"], "b": ["$from": "missing", "$default": 1]]) == ["b": 1])
    }

    @Test func textTemplatesAreNotHTMLEscaped() throws {
        #expect(try render(["body": "It's your turn in: {{game_name}}"]) == ["body": "It's your turn in: Tom & Jerry <3"])
    }

    @Test func eventMetadataIsAvailable() throws {
        let rendered = try render(["id": "{{event.id}}", "user": "{{event.user}}", "seconds": ["$from": "event.time"],
                                   "ms": ["$from": "event.time_ms"], "iso": "{{event.time_iso}}"])
        #expect(rendered == ["id": "62505215624257b417055bc4", "user": "1783478", "seconds": 1758474319, "ms": 1758474319701,
                             "iso": "2025-09-21T17:05:19.701Z"])
    }

    @Test func literalsPassThrough() throws {
        #expect(try render(["sound": "default", "badge": 1, "list": [true, "x"]]) == ["sound": "default", "badge": 1, "list": [true, "x"]])
    }

    @Test func badTemplatesAreConfigurationErrors() {
        #expect(throws: ConfigurationValueError.self) { try JSONTemplate(compiling: ["t": "{{#open}}"], keyPath: "payload") }
        #expect(throws: ConfigurationValueError.self) { try JSONTemplate(compiling: ["t": ["$from": "a", "extra": 1]], keyPath: "payload") }
    }
}
