import Logging
import PushPipeCore
import PushPipeSQLite
import PushPipeStages
import PushPipeTesting
import Synchronization
import Testing

/// The stdout transport prints where its runner's output goes, like the dry run: a test or a
/// benchmark captures or discards it, and nothing reaches the process's own standard output.
@Suite struct StdoutTransportTests {
    @Test func printsToTheRunnersOutputWithTheTokenMasked() async throws {
        let directory = try TemporaryDirectory("stdout-transport")
        defer { directory.remove() }
        let definition = try await loadPipeline(
            """
            pipeline: printed
            sources: [{type: http.event, path: /printed}]
            renderer: {type: json.template, payload: {text: "{{text}}"}}
            transport: {type: stdout, format: compact}
            """,
            in: directory
        )
        let store = try SQLiteStore(path: directory.file("state.sqlite"))
        let token = String(repeating: "ab", count: 32)
        try await store.pipeline("printed").register(DeviceToken(user: "7", kind: "device", value: token), environment: nil, replace: false)
        let lines = Mutex<[String]>([])
        let processor = EventProcessor(
            definition: definition,
            store: store,
            logger: Logger(label: "stdout-test"),
            mode: .live,
            output: OutputSink { line in lines.withLock { $0.append(line) } }
        )
        let report = await processor.process(Event(pipeline: "printed", user: "7", body: ["text": "hello"]))
        let printed = lines.withLock { $0 }
        #expect(report.deliveries.map(\.outcome) == [.delivered])
        #expect(printed.count == 1)
        #expect(printed.first?.contains(#"{"text":"hello"}"#) == true)
        #expect(printed.first?.contains("abababab…") == true)
        #expect(printed.first?.contains(token) == false)
        try await store.close()
    }
}
