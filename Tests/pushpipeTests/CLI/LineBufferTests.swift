import NIOCore
import Testing

@testable import pushpipe

/// The tap's lines from its stream's chunks: wherever the network cuts them, every line comes
/// out whole, a character of several bytes included ("…", 3 bytes, in a masked URL).
@Suite struct LineBufferTests {
    static let stream = Array("data: {\"url\":\"https://localhost/push/f78b2e03…\"}\n: keep-alive\n\ndata: ü\n".utf8)

    @Test(arguments: 1..<stream.count)
    func everyCutKeepsTheLinesWhole(at cut: Int) {
        var lines = LineBuffer()
        var seen: [String] = []
        for part in [Self.stream[..<cut], Self.stream[cut...]] {
            lines.append(ByteBuffer(bytes: part))
            while let line = lines.nextLine() { seen.append(line) }
        }
        #expect(seen == [#"data: {"url":"https://localhost/push/f78b2e03…"}"#, ": keep-alive", "", "data: ü"])
    }

    @Test func anUnfinishedLineWaitsForTheRest() {
        var lines = LineBuffer()
        lines.append(ByteBuffer(string: "data: par"))
        #expect(lines.nextLine() == nil)
        lines.append(ByteBuffer(string: "t\n"))
        #expect(lines.nextLine() == "data: part")
        #expect(lines.nextLine() == nil)
    }
}
