import ArgumentParser
import AsyncHTTPClient
import Foundation
import NIOCore
import PushPipeCore

/// `pushpipe tap`: what a running daemon does, live, stage by stage (like `vector tap`).
struct TapCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tap",
        abstract: "Print, live, each event as it passes each stage of a running daemon (one JSON object per line)."
    )

    @OptionGroup var listener: AdminListenerOption

    @Option(name: .long, help: "Only this pipeline.")
    var pipeline: String?

    @Option(name: .long, help: "Only this stage: an id such as sources[0], renderer, transport, or a kind prefix such as filters.")
    var stage: String?

    @Option(name: .long, help: "Stop after this many records.")
    var limit: Int?

    @Flag(name: .long, help: "One JSON object per line even on a terminal.")
    var json = false

    func run() async throws {
        let url = try listener.url(
            "/tap",
            query: [pipeline.map { URLQueryItem(name: "pipeline", value: $0) }, stage.map { URLQueryItem(name: "stage", value: $0) }]
                .compactMap { $0 }
        )
        let admin = listener.admin
        let readable = !json && isatty(STDOUT_FILENO) == 1
        var request = HTTPClientRequest(url: url.absoluteString)
        request.headers.add(name: "accept", value: "text/event-stream")
        // The admin token, when the daemon has one: from the environment, never a flag (a flag
        // shows in the process list).
        let token = ProcessInfo.processInfo.environment["PUSHPIPE_ADMIN_TOKEN"].flatMap { $0.isEmpty ? nil : $0 }
        if let token { request.headers.add(name: "authorization", value: "Bearer \(token)") }
        let response: HTTPClientResponse
        do {
            response = try await HTTPClient.shared.execute(request, timeout: .hours(24 * 365))
        } catch {
            throw TapError("cannot reach the daemon's admin listener at \(admin): \(error)")
        }
        switch response.status.code {
        case 200: break
        case 401 where token == nil: throw TapError("\(admin)/tap needs the daemon's admin token: set PUSHPIPE_ADMIN_TOKEN")
        case 401: throw TapError("\(admin)/tap refused the token in PUSHPIPE_ADMIN_TOKEN: it is not the daemon's admin token")
        case 429:
            let wait = response.headers.first(name: "retry-after").map { " (try again in \($0) s)" } ?? ""
            throw TapError("\(admin)/tap answered HTTP 429: every tap the daemon allows is streaming (--admin-max-taps)\(wait)")
        default: throw TapError("\(admin)/tap answered HTTP \(response.status.code)")
        }
        var printed = 0
        var lines = LineBuffer()
        for try await buffer in response.body {
            lines.append(buffer)
            while let line = lines.nextLine() {
                if line.hasPrefix(": pushpipe tap") {
                    // The daemon subscribed this tap: from here on nothing is missed.
                    FileHandle.standardError.write(Data("pushpipe tap: connected to \(admin)\n".utf8))
                }
                guard line.hasPrefix("data: ") else { continue }
                let text = String(line.dropFirst(6))
                // One write per record: a pipe reader (jq, a test) sees each as it comes.
                FileHandle.standardOutput.write(Data(((readable ? TapFormatter.readable(text) : text) + "\n").utf8))
                printed += 1
                if let limit, printed >= limit { return }
            }
        }
    }
}

struct TapError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
