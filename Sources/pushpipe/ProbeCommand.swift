import ArgumentParser
import AsyncHTTPClient
import Foundation
import PushPipeStages

/// `pushpipe probe`: a health check for places with no HTTP client, a container's
/// `HEALTHCHECK` first: the daemon's own binary asks its `/readyz` (or `/healthz`).
struct ProbeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "probe",
        abstract: "Exit 0 when a running daemon is ready (/readyz answers 200), 1 otherwise, saying why."
    )

    @OptionGroup var listener: AdminListenerOption

    @Flag(name: .long, help: "Ask /healthz instead: alive, even when not ready.")
    var live = false

    @Option(name: .long, help: "Seconds to wait for the answer.")
    var timeout: Int64 = 5

    func validate() throws {
        guard (1...300).contains(timeout) else { throw ValidationError("--timeout must be 1 to 300 seconds") }
    }

    func run() async throws {
        let url = try listener.url(live ? "/healthz" : "/readyz").absoluteString
        do {
            // The whole exchange is bounded: a listener that sends a head and then nothing is not ready.
            let (status, body) = try await BoundedExchange.run(within: .seconds(timeout)) {
                let response = try await HTTPClient.shared.execute(HTTPClientRequest(url: url), timeout: .seconds(timeout))
                let body = try await BoundedExchange.prefix(of: response.body, limit: 500)
                return (response.status.code, String(decoding: body, as: UTF8.self))
            }
            guard status == 200 else {
                print("\(url) answered HTTP \(status): \(body)")
                throw ExitCode.failure
            }
            print("\(url): \(body)")
        } catch let exit as ExitCode {
            throw exit
        } catch {
            print("cannot reach \(url): \(error)")
            throw ExitCode.failure
        }
    }
}
