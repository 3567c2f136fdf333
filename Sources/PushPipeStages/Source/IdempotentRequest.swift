import Crypto
import Foundation
import PushPipeCore

/// An event request's `Idempotency-Key` (draft-ietf-httpapi-idempotency-key-header): the same
/// key with the same body, within the pipeline's `idempotency.ttl`, gets the first answer
/// again and makes no second event; with another body it is refused (422); while the first
/// request is being stored, the second waits its turn (409).
enum IdempotentRequest {
    static let hold = IdempotencyPolicy.hold

    /// The request's key, scoped to its route and credential; nil without the header.
    static func key(of request: RouteRequest, pipeline: String, route: @autoclosure () -> String) throws -> IdempotencyKey? {
        guard var value = request.idempotencyKey else { return nil }
        // A structured-field string ("…", as the draft writes it) or the bare token many clients send.
        if value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") { value = String(value.dropFirst().dropLast()) }
        guard (1...255).contains(value.utf8.count), value.utf8.allSatisfy({ (0x21...0x7e).contains($0) && $0 != UInt8(ascii: "\"") }) else {
            throw RouteError.badRequest("Idempotency-Key must be 1 to 255 visible ASCII characters", field: "Idempotency-Key")
        }
        return IdempotencyKey(pipeline: pipeline, scope: route() + " " + request.principal, key: value)
    }

    /// Takes the key for this request, as `holder` (nil: go on), or answers as the key says.
    static func claim(_ key: IdempotencyKey, holder: String, body: JSON, context: RouteContext) async throws -> RouteResponse? {
        // Of the parsed body, whose keys serialize in order: the same JSON sent with other spacing is the same request.
        let fingerprint = SHA256.hash(data: Array(body.compactText.utf8)).map { String(format: "%02x", $0) }.joined()
        switch try await context.idempotencyKeys.claimIdempotencyKey(
            key,
            fingerprint: fingerprint,
            holder: holder,
            hold: hold,
            ttl: context.idempotency.ttl
        ) {
        case .claimed:
            return nil
        case .answered(let status, let body):
            // `Idempotent-Replayed` as Stripe names it: the caller can tell a replay from a first answer.
            return RouteResponse(status: status, body, headers: ["idempotent-replayed": "true"])
        case .usedForAnotherRequest:
            throw RouteError.unprocessable("this Idempotency-Key was used for a request with another body", field: "Idempotency-Key")
        case .inProgress:
            throw RouteError(409, "a request with this Idempotency-Key is still being stored; send it again in a moment", field: "Idempotency-Key")
        }
    }
}
