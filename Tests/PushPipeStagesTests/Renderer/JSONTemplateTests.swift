import Foundation
import PushPipeCore
import Testing

@testable import PushPipeStages

@Suite struct JSONTemplateTests {
    let event = Event(
        id: "62505215624257b417055bc4",
        pipeline: "p",
        user: "1783478",
        time: Date(timeIntervalSince1970: 1_758_474_319.701),
        body: [
            "game_id": 79_504_463, "game_name": "Tom & Jerry <3", "last_move": 1_758_474_319_701, "ratio": 0.5,
            "games": [["id": 1], ["id": 2]], "nothing": nil,
        ]
    )

    func render(_ template: JSON) throws -> JSON? {
        try JSONTemplate(compiling: template, keyPath: "payload").render(TemplateContext(event: event))
    }

    @Test func referencesKeepJSONTypes() throws {
        let rendered = try render([
            "id": ["$from": "game_id"], "move": ["$from": "last_move"], "ratio": ["$from": "ratio"],
            "second": ["$from": "games[1].id"], "null": ["$from": "nothing"],
        ])
        #expect(rendered == ["id": 79_504_463, "move": 1_758_474_319_701, "ratio": 0.5, "second": 2, "null": nil])
    }

    @Test func missingReferencesAreOmittedOrDefaulted() throws {
        #expect(try render(["a": ["$from": "missing"], "b": ["$from": "missing", "$default": 1]]) == ["b": 1])
    }

    @Test func textTemplatesAreNotHTMLEscaped() throws {
        #expect(try render(["body": "It's your turn in: {{game_name}}"]) == ["body": "It's your turn in: Tom & Jerry <3"])
    }

    @Test func eventMetadataIsAvailable() throws {
        let rendered = try render([
            "id": "{{event.id}}", "user": "{{event.user}}", "seconds": ["$from": "event.time"],
            "ms": ["$from": "event.time_ms"], "iso": "{{event.time_iso}}",
        ])
        #expect(
            rendered == [
                "id": "62505215624257b417055bc4", "user": "1783478", "seconds": 1_758_474_319, "ms": 1_758_474_319_701,
                "iso": "2025-09-21T17:05:19.701Z",
            ]
        )
    }

    @Test func literalsPassThrough() throws {
        #expect(try render(["sound": "default", "badge": 1, "list": [true, "x"]]) == ["sound": "default", "badge": 1, "list": [true, "x"]])
    }

    /// Mustache alone keeps a template's leading whitespace too (the pragma pushpipe puts in
    /// front must not make it a standalone line).
    @Test func mustacheKeepsLeadingWhitespace() throws {
        let compiled = try JSONTemplate(compiling: .string("  {{#games}}{{game_id}}{{/games}}!"), keyPath: "t")
        #expect(compiled.render(TemplateContext(event: interpolationEvent)) == "  102103!")
    }

    @Test func badTemplatesAreConfigurationErrors() {
        #expect(throws: ConfigurationValueError.self) { try JSONTemplate(compiling: ["t": "{{#open}}"], keyPath: "payload") }
        #expect(throws: ConfigurationValueError.self) { try JSONTemplate(compiling: ["t": ["$from": "a", "extra": 1]], keyPath: "payload") }
    }

    /// Text-and-names templates skip Mustache; they must render exactly as Mustache does,
    /// `games.0` and `games.count` included (the single-name shortcut this replaced rendered
    /// `{{games.0.game_id}}` alone as an empty string). A null renders as nothing in both
    /// (Mustache rendered it as "nil").
    @Test(arguments: [
        "It's your turn in: {{game_name}}", "{{games.0.game_id}}", "https://online-go.com/game/{{games.0.game_id}}",
        "{{games.count}} games", "{{ games.1.name }}/{{games.5.name}}", "{{flag}} {{off}} {{nothing}} {{missing}} {{missing.deeper}}",
        "{{event.id}}-{{event.user}}-{{event.time_ms}}", "{{vars.prefix}}ready", "x{{game_name.count}}{{game_id.x}}y", "no tags {{emoji}}",
        // Leading whitespace up to a line break: the pragma in front must not make it a standalone line.
        " {{game_name}}", "\u{0B}e {{event.id}}", "\t{{game_name}} ", "  \n{{game_name}}",
    ])
    func interpolationRendersAsMustacheDoes(template: String) throws {
        let compiled = try JSONTemplate(compiling: .string(template), keyPath: "t")
        guard case .interpolation(_, let mustache) = compiled else {
            Issue.record("\(template) should not need Mustache")
            return
        }
        let context = TemplateContext(event: interpolationEvent, vars: ["prefix": .literal("[dev] ")])
        let rendered = compiled.render(context)
        #expect(rendered == JSONTemplate.text(mustache).render(context))
        #expect(rendered != nil && rendered != "")
    }

    /// Values whose text Mustache makes its own way are left to it, and so are templates
    /// using more of Mustache than names.
    @Test func otherValuesAndTemplatesRunInMustache() throws {
        let context = TemplateContext(event: interpolationEvent)
        for template in ["ratio {{ratio}}", "{{games}}", "{{games.0}}", "{{#empty(game_name)}}none{{/empty(game_name)}}"] {
            let compiled = try JSONTemplate(compiling: .string(template), keyPath: "t")
            guard case .interpolation(let parts, let mustache) = compiled else {
                Issue.record("\(template) is text and names")
                continue
            }
            #expect(JSONTemplate.interpolate(parts, context) == nil)
            #expect(compiled.render(context) == JSONTemplate.text(mustache).render(context))
        }
        for template in [
            "{{#games}}{{name}}{{/games}}", "{{truncate3(game_name)}}", "{{{game_name}}}", "{{! note }}", "{{^flag}}x{{/flag}}",
            "{{^single(games)}}x{{/single(games)}}", "{{#single(games)}}\nx\n{{/single(games)}}",
        ] {
            let compiled = try JSONTemplate(compiling: .string(template), keyPath: "t")
            guard case .text = compiled else {
                Issue.record("\(template) needs Mustache")
                continue
            }
        }
    }

    let interpolationEvent = Event(
        id: "e1",
        pipeline: "p",
        user: "1783478",
        time: Date(timeIntervalSince1970: 1_758_474_319.701),
        body: [
            "game_name": "Tom & Jerry <3", "game_id": 79_504_463, "flag": true, "off": false, "nothing": nil,
            "ratio": 0.5, "emoji": "🎉 é", "games": [["game_id": 102, "name": "A"], ["game_id": 103, "name": "B \"q\""]],
        ]
    )

    /// The OGS body: list-condition sections render as Mustache renders them, for no game,
    /// one, several, and no list at all.
    @Test(arguments: [[], [["game_name": "A"]], [["game_name": "A"], ["game_name": "B"]], nil] as [JSON?])
    func listConditionsRenderAsMustacheDoes(games: JSON?) throws {
        let template =
            "{{prefix}}{{#single(games)}}It's your turn in: {{games.0.game_name}}{{/single(games)}}"
            + "{{#many(games)}}It's your turn in {{games.count}} "
            + "games{{#many(games)}}!{{/many(games)}}{{/many(games)}}{{#empty(games)}}none{{/empty(games)}}"
        let compiled = try JSONTemplate(compiling: .string(template), keyPath: "t")
        guard case .interpolation(let parts, let mustache) = compiled else {
            Issue.record("list conditions should not need Mustache")
            return
        }
        var body: [String: JSON] = ["prefix": "[dev] "]
        if let games { body["games"] = games }
        let context = TemplateContext(event: Event(pipeline: "p", user: "1", body: .object(body)))
        #expect(JSONTemplate.interpolate(parts, context) != nil)
        #expect(compiled.render(context) == JSONTemplate.text(mustache).render(context))
    }
}
