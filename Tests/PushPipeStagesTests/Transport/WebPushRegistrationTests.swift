import Foundation
import PushPipeCore
import PushPipeSQLite
import PushPipeTesting
import Testing

@testable import PushPipeStages

/// `token_format: webpush`: a browser's `PushSubscription.toJSON()` as it comes, checked field
/// by field, stored per endpoint (a real SQLite store behind the real route handler).
@Suite struct WebPushRegistrationTests {
    /// RFC 8291 Appendix A's browser keys: a real point on P-256 and a 16-byte secret.
    static let p256dh = "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4"
    static let auth = "BTBZMqHH6r4Tts7J_aSIgg"

    static func subscription(endpoint: String = "https://push.example.net/send/abc", p256dh: String = p256dh, auth: String = auth) -> JSON {
        ["endpoint": .string(endpoint), "expirationTime": nil, "keys": ["p256dh": .string(p256dh), "auth": .string(auth)]]
    }

    func withRoute(_ body: (RouteDefinition, RouteContext, SQLiteStore) async throws -> Void) async throws {
        let directory = try TemporaryDirectory("webpush-register")
        let store = try SQLiteStore(path: directory.file("state.sqlite"))
        let route = try #require(StageRegistry(BuiltinStages.all).routeAction(named: "register")).route([
            "action": "register", "path": "/webpush/register", "user_field": "user_id",
            "token_field": "subscription", "token_format": "webpush", "token_kind": "webpush",
        ])
        try await withCleanup(
            {
                try await body(route, RouteContext(pipeline: "web", store: store, sink: RefusingEventSink()), store)
            },
            cleanup: {
                try? await store.close()
                directory.remove()
            }
        )
    }

    func register(_ route: RouteDefinition, _ context: RouteContext, _ subscription: JSON, user: String = "ann") async throws -> RouteResponse {
        try await route.handler(
            RouteRequest(method: "POST", path: "/webpush/register", body: ["user_id": .string(user), "subscription": subscription]),
            context
        )
    }

    @Test func aSubscriptionIsStoredAndTheSameEndpointWithNewKeysReplacesIt() async throws {
        try await withRoute { route, context, store in
            #expect(try await register(route, context, Self.subscription()).status == 200)
            let newAuth = Data(repeating: 7, count: 16).base64URLEncodedString()
            _ = try await register(route, context, Self.subscription(auth: newAuth))
            var tokens = try await store.pipeline("web").tokens(user: "ann", kind: "webpush")
            #expect(tokens.count == 1)
            let stored = try JSON.parse(tokens[0].value)
            #expect(stored["endpoint"] == "https://push.example.net/send/abc")
            #expect(stored["keys"]?["auth"]?.stringValue == newAuth)
            #expect(stored["keys"]?["p256dh"]?.stringValue == Self.p256dh)
            _ = try await register(route, context, Self.subscription(endpoint: "https://updates.push.services.mozilla.com/wpush/v2/xyz"))
            tokens = try await store.pipeline("web").tokens(user: "ann", kind: "webpush")
            #expect(tokens.count == 2, "another browser is another subscription")
        }
    }

    @Test(
        arguments: [
            (subscription(endpoint: "http://push.example.net/x"), "subscription.endpoint"),
            (subscription(endpoint: "not a url"), "subscription.endpoint"),
            (subscription(p256dh: String(p256dh.dropLast(2))), "subscription.keys.p256dh"),
            (subscription(p256dh: "A" + String(p256dh.dropFirst())), "subscription.keys.p256dh"),  // not 0x04 (uncompressed)
            (subscription(p256dh: "not base64!"), "subscription.keys.p256dh"),
            (subscription(auth: Data(count: 15).base64URLEncodedString()), "subscription.keys.auth"),
            (["endpoint": "https://push.example.net/x"], "subscription.keys.p256dh"),
            (nil, "subscription"),
            ("a string", "subscription"),
        ] as [(JSON, String)]
    )
    func anythingElseIsRefusedNamingTheFieldAndStoresNothing(_ subscription: JSON, _ field: String) async throws {
        try await withRoute { route, context, store in
            await #expect { _ = try await register(route, context, subscription) } throws: { error in
                guard let refusal = error as? RouteError else { return false }
                return refusal.field == field && (400..<500).contains(refusal.status)
            }
            let stored = try await store.pipeline("web").tokens(user: "ann", kind: "webpush")
            #expect(stored.isEmpty)
        }
    }

    /// Logs show a subscription's push service and the start of its id, never its keys, once a
    /// registry with the `webpush` transport described its tokens.
    @Test func aSubscriptionShowsItsServiceAndTheStartOfItsID() {
        _ = StageRegistry(BuiltinStages.all)
        let subscription =
            #"{"endpoint":"https://fcm.googleapis.com/fcm/send/dGhpcyBpcyBh:APA91bE","keys":{"auth":"BTBZMqHH6r4Tts7J_aSIgg","p256dh":"BCVx"}}"#
        #expect(TokenMask.mask(subscription) == "fcm.googleapis.com/dGhpcyBp…")
        // The request's URL is the endpoint (the subscription's address): cut to the start of its id.
        #expect(
            TokenMask.maskURL("https://fcm.googleapis.com/fcm/send/dGhpcyBpcyBh:APA91bE", token: subscription)
                == "https://fcm.googleapis.com/fcm/send/dGhpcyBp…"
        )
    }

    /// The mask reads the endpoint off the stored text without parsing it; whatever the
    /// endpoint, it shows what parsing the document and the URL shows (the slow way).
    @Test(arguments: [
        "https://fcm.googleapis.com/fcm/send/dGhpcyBpcyBh:APA91bE",
        "https://updates.push.services.mozilla.com/wpush/v2/gAAAAABh",
        "https://web.push.apple.com/QGuQyavXutnMqB",
        "https://localhost:8443/push/b1",
        "https://h.example/a/b/",
        "https://user@h.example/push/x",
        "https://h.example/push/x%2Fy",
        "https://h.example/push/x?y=/z",
        "https://[2001:db8::1]:443/push/x",
        #"https:\/\/h.example\/push\/escaped"#,
        "https://h.example/push/ünïcode",
        "https://bücher.example/push/x",
        "https://h.example/push;v=1/x",
        "https://h.example/push/x;v=1",
        "https://h.example/push/x#frag",
        "https://h.example:notaport/push/x",
        "https://h.example:/push/x",
        "https://h.example:8443/push/x",
        "https://:443/push/x",
        "https://h.example",
    ])
    func theMaskReadOffTheTextIsWhatParsingShows(endpoint: String) throws {
        let token = (["endpoint": .string(endpoint), "keys": ["auth": "BTBZMqHH6r4Tts7J_aSIgg", "p256dh": "BCVx"]] as JSON).compactText
        let parsed = try #require(try JSON.parse(token)["endpoint"]?.stringValue)
        let expected = URL(string: parsed).flatMap { url in url.host.map { $0 + "/" + TokenMask.mask(url.lastPathComponent) } }
        #expect(WebPushSubscriptionFormat().mask(token) == expected)
    }
}
