import Foundation
import PushPipeCore

/// A browser's subscription as the register route stored it (`TokenFormat.webPush`):
/// `{"endpoint": "https://…", "keys": {"p256dh": …, "auth": …}}`, keys in base64url.
struct WebPushSubscription: Sendable {
    var endpoint: String
    var p256dh: Data
    var auth: Data

    struct Invalid: Error, CustomStringConvertible {
        var field: String
        var problem: String
        init(field: String, _ problem: String) {
            self.field = field
            self.problem = problem
        }
        var description: String { "\(field): \(problem)" }
    }

    init(stored: String) throws {
        guard let json = try? JSON.parse(stored) else { throw Invalid(field: "subscription", "not JSON") }
        guard let endpoint = json["endpoint"]?.stringValue else { throw Invalid(field: "endpoint", "missing") }
        guard let p256dh = json["keys"]?["p256dh"]?.stringValue.flatMap({ Data(base64URLEncoded: $0) }) else {
            throw Invalid(field: "keys.p256dh", "missing or not base64url")
        }
        guard let auth = json["keys"]?["auth"]?.stringValue.flatMap({ Data(base64URLEncoded: $0) }) else {
            throw Invalid(field: "keys.auth", "missing or not base64url")
        }
        self.endpoint = endpoint
        self.p256dh = p256dh
        self.auth = auth
    }
}
