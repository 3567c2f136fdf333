import Crypto
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import PushPipeCore
import _CryptoExtras

/// An in-process Google OAuth token endpoint and FCM HTTP v1 send endpoint, over TLS on
/// 127.0.0.1. The token endpoint verifies the RS256 assertion with the service account's
/// public key and checks its claims; the send endpoint checks the bearer token and the
/// message (one target, string-only data, size), and answers with a `name` or a scripted error.
public final class FCMStandIn: HTTP1StandIn {
    public struct Send: Sendable {
        public var projectID: String
        public var message: JSON?
        public var validateOnly: Bool
        public var accessToken: String
        /// Why FCM refused it, when it did.
        public var rejection: String?
    }

    public enum Answer: Sendable {
        case accept
        /// An FCM error with its `errorCode` detail (nil: none, like a bare 401).
        case error(status: Int, errorCode: String?, message: String, retryAfter: Int? = nil)
    }

    struct State: Sendable {
        var sends: [Send] = []
        var tokenRequests = 0
        var validTokens: Set<String> = []
        var script: [Answer] = []
        var tokenLifetime = 3600
        var assertionProblems: [String] = []
    }

    let state = ObservedState(State())
    public let port: Int
    let publicKey: _RSA.Signing.PublicKey
    let clientEmail: String
    private let channel: any Channel

    private init(port: Int, publicKey: _RSA.Signing.PublicKey, clientEmail: String, channel: any Channel) {
        self.port = port
        self.publicKey = publicKey
        self.clientEmail = clientEmail
        self.channel = channel
    }

    public var baseURL: String { "https://localhost:\(port)" }
    public var tokenURI: String { "\(baseURL)/token" }
    public var sends: [Send] { state.value.sends }
    public var tokenRequests: Int { state.value.tokenRequests }
    public var assertionProblems: [String] { state.value.assertionProblems }

    public static func start(publicKey: _RSA.Signing.PublicKey, clientEmail: String, authority: TestCertificateAuthority) async throws -> FCMStandIn {
        let box = LateBound<FCMStandIn>()
        let channel = try await bind(authority: authority, box: box)
        let standIn = FCMStandIn(port: channel.localAddress?.port ?? 0, publicKey: publicKey, clientEmail: clientEmail, channel: channel)
        box.value = standIn
        return standIn
    }

    public func script(_ answers: Answer...) { state.update { $0.script += answers } }
    /// Revokes every access token: the next send answers 401 without an FCM error code.
    public func revokeAccessTokens() { state.update { $0.validTokens.removeAll() } }
    public func setTokenLifetime(_ seconds: Int) { state.update { $0.tokenLifetime = seconds } }

    @discardableResult
    public func waitForSends(_ count: Int, timeout: Double = 20) async throws -> [Send] {
        try await state.wait(
            timeout: timeout,
            { $0.sends.count >= count ? $0.sends : nil },
            failure: { WaitTimedOut("expected \(count) FCM sends, got \($0.sends.count)") }
        )
    }

    public func stop() async { try? await channel.close() }

    /// A throwaway service-account file whose token_uri is this stand-in.
    public static func serviceAccount(privateKey: _RSA.Signing.PrivateKey, clientEmail: String, projectID: String, tokenURI: String) -> String {
        JSON.object([
            "type": "service_account", "project_id": .string(projectID), "private_key_id": "0123456789abcdef",
            "private_key": .string(privateKey.pkcs8PEMRepresentation), "client_email": .string(clientEmail),
            "token_uri": .string(tokenURI), "client_id": "1",
        ]).prettyText
    }

    func handle(version: HTTPVersion, method: String, path: String, headers: HTTPHeaders, body: Data) -> (Int, [(String, String)], JSON) {
        if method == "POST" && path == "/token" { return token(body) }
        let parts = path.split(separator: "/")
        if method == "POST", parts.count == 4, parts[0] == "v1", parts[1] == "projects", parts[3] == "messages:send" {
            return send(project: String(parts[2]), headers: headers, body: body)
        }
        return (404, [], ["error": ["code": 404, "message": "not found", "status": "NOT_FOUND"]])
    }

    private func token(_ body: Data) -> (Int, [(String, String)], JSON) {
        var form: [String: String] = [:]
        for pair in String(decoding: body, as: UTF8.self).split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1).map { String($0).removingPercentEncoding ?? String($0) }
            if parts.count == 2 { form[parts[0]] = parts[1] }
        }
        let problem = verifyAssertion(grant: form["grant_type"], assertion: form["assertion"] ?? "")
        return state.update { state in
            state.tokenRequests += 1
            if let problem {
                state.assertionProblems.append(problem)
                return (400, [], ["error": "invalid_grant", "error_description": .string(problem)])
            }
            let token = "ya29.stand-in-\(state.tokenRequests)-\(UUID().uuidString.prefix(8))"
            state.validTokens.insert(token)
            return (200, [], ["access_token": .string(token), "expires_in": .int(Int64(state.tokenLifetime)), "token_type": "Bearer"])
        }
    }

    func verifyAssertion(grant: String?, assertion: String) -> String? {
        guard grant == "urn:ietf:params:oauth:grant-type:jwt-bearer" else { return "unsupported grant_type" }
        let parts = assertion.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerData = APNsStandIn.base64URL(parts[0]), let claimsData = APNsStandIn.base64URL(parts[1]),
            let signature = APNsStandIn.base64URL(parts[2]), let header = try? JSON.parse(headerData), let claims = try? JSON.parse(claimsData)
        else { return "malformed assertion" }
        guard header["alg"] == "RS256" else { return "assertion is not RS256" }
        guard
            publicKey.isValidSignature(
                _RSA.Signing.RSASignature(rawRepresentation: signature),
                for: Data("\(parts[0]).\(parts[1])".utf8),
                padding: .insecurePKCS1v1_5
            )
        else { return "invalid assertion signature" }
        guard claims["iss"]?.stringValue == clientEmail else { return "wrong iss" }
        guard claims["scope"] == "https://www.googleapis.com/auth/firebase.messaging" else { return "wrong scope" }
        guard claims["aud"]?.stringValue == tokenURI else { return "wrong aud" }
        guard let issuedAt = claims["iat"]?.intValue, let expires = claims["exp"]?.intValue, expires - issuedAt == 3600,
            abs(Double(issuedAt) - Date().timeIntervalSince1970) < 300
        else { return "bad iat/exp" }
        return nil
    }

    private func send(project: String, headers: HTTPHeaders, body: Data) -> (Int, [(String, String)], JSON) {
        let bearer = headers.first(name: "authorization").flatMap { $0.hasPrefix("Bearer ") ? String($0.dropFirst(7)) : nil } ?? ""
        let json = try? JSON.parse(body)
        let message = json?["message"]
        var rejection: String?
        let targets = ["token", "topic", "condition"].filter { message?[$0] != nil }
        if message == nil {
            rejection = "no message"
        } else if targets.count != 1 {
            rejection = "exactly one of token, topic, condition"
        } else if let data = message?["data"]?.objectValue, data.values.contains(where: { $0.stringValue == nil }) {
            rejection = "data values must be strings"
        } else if body.count > 4096 + 128 {
            rejection = "message too big"
        }
        return state.update { state in
            let authorized = state.validTokens.contains(bearer)
            state.sends.append(
                Send(
                    projectID: project,
                    message: message,
                    validateOnly: json?["validate_only"] == true,
                    accessToken: bearer,
                    rejection: authorized ? rejection : "unauthenticated"
                )
            )
            guard authorized else {
                return (401, [], ["error": ["code": 401, "message": "Request had invalid authentication credentials.", "status": "UNAUTHENTICATED"]])
            }
            if let rejection { return FCMStandIn.error(400, "INVALID_ARGUMENT", "Invalid value: \(rejection)") }
            let answer = state.script.isEmpty ? .accept : state.script.removeFirst()
            switch answer {
            case .accept:
                return (200, [], ["name": .string("projects/\(project)/messages/\(UUID().uuidString.lowercased())")])
            case .error(let status, let code, let message, let retryAfter):
                var response = FCMStandIn.error(status, code, message)
                if let retryAfter { response.1.append(("retry-after", String(retryAfter))) }
                return response
            }
        }
    }

    static func error(_ status: Int, _ code: String?, _ message: String) -> (Int, [(String, String)], JSON) {
        var error: [String: JSON] = ["code": .int(Int64(status)), "message": .string(message), "status": "ERROR"]
        if let code { error["details"] = [["@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": .string(code)]] }
        return (status, [], ["error": .object(error)])
    }
}
