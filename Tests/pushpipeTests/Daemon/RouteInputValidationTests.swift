import Foundation
import PushPipeCore
import PushPipeTesting
import Testing

/// User ids and tokens in bodies and paths are checked by what the route declares;
/// a refused request answers 4xx `{"error", "field"}` and stores nothing.
@Suite struct RouteInputValidationTests {
    typealias H = OGSFlowHarness

    func expectRefused(_ response: HTTPTestClient.Response, _ status: Int, field: String) {
        #expect(response.status == status, "\(response.text)")
        #expect(response.body?["field"] == .string(field), "\(response.text)")
        #expect(response.body?["error"]?.stringValue?.isEmpty == false, "\(response.text)")
    }

    @Test func ogsUserIDsAreDigitsInBodiesAndPaths() async throws {
        try await H.with { harness in
            try await harness.daemon { _, client in
                for bad: JSON in ["abc", "12 34", "-5", "1e3", ""] {
                    let response = try await client.request("POST", "/register", json: ["user_id": bad, "device_token": .string(H.token)])
                    expectRefused(response, 400, field: "user_id")
                }
                for bad: JSON in [true, 12.5, -3, ["1"]] {
                    let response = try await client.request("POST", "/register", json: ["user_id": bad, "device_token": .string(H.token)])
                    expectRefused(response, 422, field: "user_id")
                }
                let users = try await client.request("GET", "/users-by-token/\(H.token)")
                #expect(users.body?["user_ids"] == [], "a refused registration stores nothing")

                expectRefused(try await client.request("GET", "/check/abc"), 400, field: "user_id")
                expectRefused(try await client.request("GET", "/diagnostics/abc"), 400, field: "user_id")
                expectRefused(try await client.request("GET", "/check/12%2034"), 400, field: "user_id")
                #expect(harness.ogs.requests.isEmpty, "nothing was asked of OGS for a bad id")

                // A JSON number and a string of digits are the same valid user.
                #expect(
                    try await client.request("POST", "/register", json: ["user_id": .int(H.player), "device_token": .string(H.token)]).status == 200
                )
                #expect(try await client.request("GET", "/diagnostics/\(H.player)").status == 200)
                #expect(try await client.request("GET", "/users-by-token/\(H.token)").body?["user_ids"] == [.string(String(H.player))])
            }
        }
    }

    @Test func usersByTokenTakesOnlyHexTokens() async throws {
        try await H.with { harness in
            try await harness.daemon { _, client in
                for bad in [
                    "xyz", "..%2F..%2Fetc%2Fpasswd", "%01%02%03", String(repeating: "a", count: 31), String(repeating: "ab", count: 201),
                    String(repeating: "g", count: 64),
                ] {
                    let response = try await client.request("GET", "/users-by-token/\(bad)")
                    expectRefused(response, 400, field: "device_token")
                }
                let upper = try await client.request("GET", "/users-by-token/\(H.token.uppercased())")
                #expect(upper.status == 200)
                #expect(upper.body?["device_token"] == .string(H.token), "stored and compared lower-case")
            }
        }
    }
}
