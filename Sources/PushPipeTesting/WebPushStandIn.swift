import Crypto
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import PushPipeCore

/// An in-process push service (RFC 8030) over TLS on 127.0.0.1, with browsers' subscriptions
/// it makes itself. It reads every message as the browser would: it checks the VAPID
/// signature and claims (RFC 8292) and decrypts the body with the subscription's private key
/// (RFC 8291, its own derivation, not pushpipe's), then answers 201 or what the test scripted.
public final class WebPushStandIn: HTTP1StandIn {
    public struct Message: Sendable {
        public var subscription: String
        /// The decrypted payload (nil when it did not decrypt: `rejection` says why).
        public var plaintext: Data?
        public var headers: [String: String]
        public var vapidSubject: String?
        public var rejection: String?
        /// `HTTP/2.0` when the sender took the `h2` the stand-in offered.
        public var httpVersion = ""

        public var json: JSON? { plaintext.flatMap { try? JSON.parse($0) } }
    }

    public struct Answer: Sendable {
        public var status: Int
        public var retryAfter: Int?
        /// More headers (a redirect's `location`), and a body other than the empty object.
        public var headers: [(String, String)]
        public var body: JSON?
        /// Bytes sent as the body instead of `body`: what no JSON encoder writes (NUL, invalid UTF-8).
        public var rawBody: Data?
        public init(status: Int, retryAfter: Int? = nil, headers: [(String, String)] = [], body: JSON? = nil, rawBody: Data? = nil) {
            self.status = status
            self.retryAfter = retryAfter
            self.headers = headers
            self.body = body
            self.rawBody = rawBody
        }
    }

    struct Browser: Sendable {
        var key: P256.KeyAgreement.PrivateKey
        var auth: Data
    }

    struct State: Sendable {
        var browsers: [String: Browser] = [:]
        var messages: [Message] = []
        var script: [Answer] = []
        /// The answer when nothing is scripted: a push service that always answers the same.
        var standing = Answer(status: 201)
    }

    let state = ObservedState(State())
    public let port: Int
    /// Off for benchmarks: every POST to `/push/<id>` is answered 201 and only counted, so the
    /// stand-in costs little next to the sender measured.
    let checks: Bool
    private let accepted = Counter()
    private let connectionCount = Counter()
    private let channel: any Channel

    private init(port: Int, checks: Bool, channel: any Channel) {
        self.port = port
        self.checks = checks
        self.channel = channel
    }

    /// Messages answered without checks (`checks: false`).
    public var acceptedUnchecked: Int { accepted.current }
    /// Connections senders opened to this push service.
    public var connections: Int { connectionCount.current }

    public var origin: String { "https://localhost:\(port)" }
    public var messages: [Message] { state.value.messages }

    /// - Parameter http2: offer `h2` in ALPN, as the browsers' push services do.
    public static func start(
        authority: TestCertificateAuthority,
        checks: Bool = true,
        port: Int = 0,
        http2: Bool = false
    ) async throws -> WebPushStandIn {
        let box = LateBound<WebPushStandIn>()
        let channel = try await bind(authority: authority, box: box, port: port, http2: http2)
        let standIn = WebPushStandIn(port: channel.localAddress?.port ?? 0, checks: checks, channel: channel)
        box.value = standIn
        return standIn
    }

    /// A new browser subscription, as `PushSubscription.toJSON()` gives it.
    public func subscribe(_ id: String = UUID().uuidString.lowercased()) -> JSON {
        let browser = Browser(key: P256.KeyAgreement.PrivateKey(), auth: Data((0..<16).map { _ in UInt8.random(in: 0...255) }))
        state.update { $0.browsers[id] = browser }
        return [
            "endpoint": .string("\(origin)/push/\(id)"), "expirationTime": nil,
            "keys": [
                "p256dh": .string(browser.key.publicKey.x963Representation.base64URLEncodedString()),
                "auth": .string(browser.auth.base64URLEncodedString()),
            ],
        ]
    }

    /// The browser unsubscribed: its endpoint answers 410 from now on.
    public func unsubscribe(_ id: String) { state.update { _ = $0.browsers.removeValue(forKey: id) } }

    public func script(_ answers: Answer...) { state.update { $0.script += answers } }

    /// Answers every message this way once the script is used up (201 until set).
    public func answerAlways(_ answer: Answer) { state.update { $0.standing = answer } }

    @discardableResult
    public func waitForMessages(_ count: Int, timeout: Double = 20) async throws -> [Message] {
        try await state.wait(
            timeout: timeout,
            { $0.messages.count >= count ? $0.messages : nil },
            failure: { WaitTimedOut("expected \(count) Web Push messages, got \($0.messages.count)") }
        )
    }

    public func stop() async { try? await channel.close() }

    func connected() { connectionCount.increment() }

    func handle(version: HTTPVersion, method: String, path: String, headers: HTTPHeaders, body: Data) -> (Int, [(String, String)], JSON) {
        let (status, extra, bytes) = respond(version: version, method: method, path: path, headers: headers, body: body)
        return (status, extra, (try? JSON.parse(bytes)) ?? [:])
    }

    func respond(version: HTTPVersion, method: String, path: String, headers: HTTPHeaders, body: Data) -> (Int, [(String, String)], Data) {
        let (status, extra, json, raw) = answer(version: version, method: method, path: path, headers: headers, body: body)
        return (status, extra, raw ?? json.serialized())
    }

    private func answer(
        version: HTTPVersion,
        method: String,
        path: String,
        headers: HTTPHeaders,
        body: Data
    ) -> (Int, [(String, String)], JSON, Data?) {
        let parts = path.split(separator: "/")
        guard method == "POST", parts.count == 2, parts[0] == "push" else { return (404, [], ["error": "not found"], nil) }
        let id = String(parts[1])
        guard checks else {
            accepted.increment()
            return (201, [("location", "\(origin)/message/\(id)")], [:], nil)
        }
        var fields: [String: String] = [:]
        for header in headers { fields[header.name.lowercased()] = header.value }
        return state.update { state in
            guard let browser = state.browsers[id] else { return (410, [], ["error": "unsubscribed"], nil) }
            let (subject, vapidProblem) = verifyVAPID(fields["authorization"] ?? "")
            var message = Message(subscription: id, plaintext: nil, headers: fields, vapidSubject: subject, rejection: vapidProblem)
            message.httpVersion = version.description
            if message.rejection == nil, fields["ttl"].flatMap(Int.init) == nil { message.rejection = "missing TTL" }
            if message.rejection == nil, fields["content-encoding"] != "aes128gcm" { message.rejection = "not aes128gcm" }
            if message.rejection == nil, body.count > 4096 {
                state.messages.append(message)
                return (413, [], ["error": "payload too large"], nil)
            }
            if message.rejection == nil {
                do { message.plaintext = try Self.decrypt(body, browser: browser) } catch { message.rejection = "does not decrypt: \(error)" }
            }
            state.messages.append(message)
            if let rejection = message.rejection {
                return (rejection.hasPrefix("VAPID") ? 403 : 400, [], ["error": .string(rejection)], nil)
            }
            let answer = state.script.isEmpty ? state.standing : state.script.removeFirst()
            var extra: [(String, String)] = []
            if answer.status == 201 { extra.append(("location", "\(origin)/message/\(UUID().uuidString.lowercased())")) }
            if let retryAfter = answer.retryAfter { extra.append(("retry-after", String(retryAfter))) }
            return (answer.status, extra + answer.headers, answer.body ?? [:], answer.rawBody)
        }
    }

    /// `vapid t=<JWT>, k=<key>`: an ES256 signature by `k`, `aud` this origin, `exp` within 24 h.
    func verifyVAPID(_ authorization: String) -> (subject: String?, problem: String?) {
        guard authorization.hasPrefix("vapid ") else { return (nil, "VAPID: no vapid authorization") }
        var values: [String: String] = [:]
        for part in authorization.dropFirst(6).split(separator: ",") {
            let pair = part.trimmingCharacters(in: .whitespaces).split(separator: "=", maxSplits: 1).map(String.init)
            if pair.count == 2 { values[pair[0]] = pair[1] }
        }
        guard let token = values["t"], let keyText = values["k"], let keyData = Data(base64URLEncoded: keyText),
            let key = try? P256.Signing.PublicKey(x963Representation: keyData)
        else { return (nil, "VAPID: no t or k") }
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let header = Data(base64URLEncoded: parts[0]).flatMap({ try? JSON.parse($0) }),
            let claims = Data(base64URLEncoded: parts[1]).flatMap({ try? JSON.parse($0) }),
            let signature = Data(base64URLEncoded: parts[2]).flatMap({ try? P256.Signing.ECDSASignature(rawRepresentation: $0) })
        else { return (nil, "VAPID: malformed JWT") }
        guard header["alg"] == "ES256" else { return (nil, "VAPID: not ES256") }
        guard key.isValidSignature(signature, for: Data("\(parts[0]).\(parts[1])".utf8)) else { return (nil, "VAPID: bad signature") }
        guard claims["aud"]?.stringValue == origin else { return (nil, "VAPID: aud is not \(origin)") }
        let now = Date().timeIntervalSince1970
        guard let expires = claims["exp"]?.doubleValue, expires > now, expires <= now + 24 * 3600 else { return (nil, "VAPID: exp not within 24 h") }
        return (claims["sub"]?.stringValue, nil)
    }

    struct Undecryptable: Error, CustomStringConvertible {
        var description: String
    }

    /// RFC 8188 with the RFC 8291 key derivation, one record.
    static func decrypt(_ body: Data, browser: Browser) throws -> Data {
        let body = Data(body)
        guard body.count > 86 + 16, body[20] == 65 else { throw Undecryptable(description: "header") }
        let salt = body[0..<16]
        let senderPublic = body[21..<86]
        let sender = try P256.KeyAgreement.PublicKey(x963Representation: senderPublic)
        let secret = try browser.key.sharedSecretFromKeyAgreement(with: sender)
        let browserPublic = browser.key.publicKey.x963Representation
        let prkKey = HMAC<SHA256>.authenticationCode(for: secret.withUnsafeBytes { Data($0) }, using: SymmetricKey(data: browser.auth))
        var keyInfo = Data("WebPush: info\0".utf8) + browserPublic + senderPublic
        keyInfo.append(1)
        let ikm = HMAC<SHA256>.authenticationCode(for: keyInfo, using: SymmetricKey(data: Data(prkKey)))
        let prk = HMAC<SHA256>.authenticationCode(for: Data(ikm), using: SymmetricKey(data: salt))
        let cek = Data(HMAC<SHA256>.authenticationCode(for: Data("Content-Encoding: aes128gcm\0\u{1}".utf8), using: SymmetricKey(data: Data(prk))))
            .prefix(16)
        let nonce = Data(HMAC<SHA256>.authenticationCode(for: Data("Content-Encoding: nonce\0\u{1}".utf8), using: SymmetricKey(data: Data(prk))))
            .prefix(12)
        let record = body[86...]
        let box = try AES.GCM.SealedBox(nonce: AES.GCM.Nonce(data: nonce), ciphertext: record.dropLast(16), tag: record.suffix(16))
        var padded = try AES.GCM.open(box, using: SymmetricKey(data: cek))
        while padded.last == 0 { padded.removeLast() }
        guard padded.last == 2 else { throw Undecryptable(description: "no last-record delimiter") }
        return padded.dropLast()
    }
}
