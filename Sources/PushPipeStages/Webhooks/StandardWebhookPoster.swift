import AsyncHTTPClient
import Crypto
import Foundation
import NIOCore
import PushPipeCore

/// POSTs outcome batches as the Standard Webhooks specification (standardwebhooks.com) says:
/// `webhook-id`, `webhook-timestamp`, and `webhook-signature: v1,<base64 HMAC-SHA256 of
/// "id.timestamp.body">` keyed with the bytes of the `whsec_` secret, so a receiver checks
/// them with any of its libraries.
public struct StandardWebhookPoster: WebhookPoster {
    /// A receiver that has not answered, body included, within this is tried again later.
    let timeout: Duration

    public init(timeout: Duration = .seconds(15)) { self.timeout = timeout }

    public func post(_ message: WebhookMessage, to target: WebhookTarget) async -> WebhookAnswer {
        // Checked when the pipeline loaded: a pipeline with a bad secret does not start.
        guard let key = target.key else { return .retry(seconds: nil, reason: "the webhook's secret is not `whsec_` and base64") }
        let body = message.body.serialized()
        var request = HTTPClientRequest(url: target.url)
        request.method = .POST
        request.headers.add(name: "content-type", value: "application/json")
        for (name, value) in Self.signatureHeaders(message, body: body, key: key) { request.headers.add(name: name, value: value) }
        request.body = .bytes(ByteBuffer(bytes: body))
        do {
            // The body is read (bounded, in time too): the connection goes back to the pool for
            // the next batch, and a receiver that sends a head and then nothing holds no batch.
            let (status, retryAfter) = try await BoundedExchange.run(within: timeout) { [request, timeout] in
                let response = try await SharedHTTPClients.client(trusting: "").execute(
                    request,
                    timeout: .nanoseconds(Int64(timeout / .nanoseconds(1)))
                )
                _ = try await BoundedExchange.prefix(of: response.body, limit: 64 * 1024)
                return (response.status.code, response.headers.first(name: "retry-after"))
            }
            if (200..<300).contains(status) { return .taken }
            return .retry(seconds: Self.retryAfter(retryAfter), reason: "HTTP \(status)")
        } catch {
            return .retry(seconds: nil, reason: "\(error)")
        }
    }

    /// `Retry-After` as seconds, when it is a number of them (finite, not negative): `NaN`,
    /// `inf` or a date count as none, and the dispatcher backs off on its own.
    static func retryAfter(_ header: String?) -> Double? {
        guard let header, let seconds = Double(header.trimmingCharacters(in: .whitespaces)), seconds.isFinite, seconds >= 0 else { return nil }
        return seconds
    }

    static func signatureHeaders(_ message: WebhookMessage, body: Data, key: [UInt8]) -> [(String, String)] {
        let signed = Data("\(message.id).\(message.timestamp).".utf8) + body
        let signature = Data(HMAC<SHA256>.authenticationCode(for: signed, using: SymmetricKey(data: key))).base64EncodedString()
        return [("webhook-id", message.id), ("webhook-timestamp", String(message.timestamp)), ("webhook-signature", "v1,\(signature)")]
    }
}
