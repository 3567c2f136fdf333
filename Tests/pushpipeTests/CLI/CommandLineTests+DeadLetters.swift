import Foundation
import PushPipeCore
import PushPipeSQLite
import PushPipeTesting
import Testing

/// `pushpipe dead-letters` on a state file that holds a dead letter.
extension CommandLineTests {
    /// `show` takes `--json`, as the README and `docs/operations.md` write it, and prints the
    /// same JSON without it.
    @Test func deadLettersShowTakesJSON() async throws {
        let directory = try TemporaryDirectory("dead-letters")
        defer { directory.remove() }
        let store = try SQLiteStore(path: directory.file("state.sqlite"))
        let dead = EventRecord(
            pipeline: "p",
            eventID: "e1",
            state: .deadLetter,
            reason: "render",
            acceptedAt: 1,
            updatedAt: 2,
            input: EventRecord.Input(time: 1, body: ["text": "hi"])
        )
        try await store.pipeline("p").recordOutcome(deliveries: [], state: [], events: [dead])
        try await store.close()

        let json = try await pushpipe(["dead-letters", "show", "e1", "--json", "--store", "sqlite:state.sqlite"], in: directory)
        #expect(json.status == 0, "\(json.errors)")
        let shown = try JSON.parse(json.output.joined(separator: "\n"))
        #expect(shown["id"] == "e1" && shown["state"] == "dead_letter" && shown["input"]?["body"] == ["text": "hi"], "\(shown)")
        let plain = try await pushpipe(["dead-letters", "show", "e1", "--store", "sqlite:state.sqlite"], in: directory)
        #expect(try JSON.parse(plain.output.joined(separator: "\n")) == shown)
    }
}
