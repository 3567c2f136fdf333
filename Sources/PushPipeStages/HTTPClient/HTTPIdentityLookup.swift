import AsyncHTTPClient
import NIOCore
import NIOHTTP1
import PushPipeCore

/// The identity URLs of `auth: {type: identity}` routes, asked over the process's shared HTTP
/// clients. Redirects are not followed (a redirect would carry the caller's credential to
/// wherever it points), the check's `timeout` bounds the whole exchange, body included, and at
/// most `IdentityAnswer.bodyLimit` bytes are read. The URL is the operator's, not a user's, so
/// the egress policy for user-chosen URLs does not apply (a stand-in on 127.0.0.1 is fine).
public struct HTTPIdentityLookup: IdentityLookup {
    public init() {}

    public func ask(_ check: IdentityCheck, authorization: String) async throws(IdentityLookupFailure) -> IdentityAnswer {
        let client = SharedHTTPClients.egressClient(trusting: check.caFile, checkingPeers: false)
        let timeout = check.timeout
        do {
            return try await BoundedExchange.run(within: timeout) {
                try await Self.exchange(check.url, authorization: authorization, on: client, timeout: timeout)
            }
        } catch let failure as IdentityLookupFailure {
            throw failure
        } catch let error as HTTPClientError where error == .deadlineExceeded || error == .readTimeout || error == .connectTimeout {
            throw .timedOut
        } catch {
            throw .failed(String("\(error)".prefix(200)))
        }
    }

    /// The status and the start of the body; a redirect comes back as it is (3xx), not followed.
    private static func exchange(_ url: String, authorization: String, on client: HTTPClient, timeout: Duration) async throws -> IdentityAnswer {
        var request = HTTPClientRequest(url: url)
        request.headers.add(name: "authorization", value: authorization)
        request.headers.add(name: "accept", value: "application/json")
        request.headers.add(name: "user-agent", value: "pushpipe")
        let response = try await client.execute(request, timeout: .nanoseconds(Int64(timeout / .nanoseconds(1))))
        return IdentityAnswer(
            status: Int(response.status.code),
            body: try await BoundedExchange.prefix(of: response.body, limit: IdentityAnswer.bodyLimit)
        )
    }
}
