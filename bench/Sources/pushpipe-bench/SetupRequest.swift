import Foundation
import PushPipeCore
import PushPipeTesting

/// A soak's setup request (a registration), sent again while the daemon answers that it is
/// still starting (503 until its pipelines' routes are up, after its listener is) or busy
/// (429), for up to two minutes: a loaded machine starts daemons slowly.
enum SetupRequest {
    static func post(_ client: HTTPTestClient, _ path: String, _ body: JSON) async throws -> HTTPTestClient.Response {
        let deadline = ContinuousClock.now + .seconds(120)
        while true {
            let response = try? await client.request("POST", path, json: body)
            if let response, response.status != 503, response.status != 429 { return response }
            guard ContinuousClock.now < deadline else {
                throw ChaosSetupError("\(path) still refused after 2 minutes: \(response.map { "\($0.status) \($0.text)" } ?? "no answer")")
            }
            try await Task.sleep(for: .milliseconds(200))
        }
    }
}
