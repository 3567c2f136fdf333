import Foundation
import JWTKit
import PushPipeCore
import Testing

@testable import PushPipeHTTP

/// The credential of an `Authorization` header, read byte by byte for ASCII headers: the same
/// credential (or none) that reading it by characters with Foundation's white space gave.
@Suite struct RouteAuthenticatorTests {
    /// How the header was read before: by characters, trimmed by Foundation.
    static func byCharacters(_ header: String?) -> String? {
        guard let header, header.lowercased().hasPrefix("bearer ") else { return nil }
        let value = header.dropFirst("bearer ".count).trimmingCharacters(in: .whitespaces)
        return value.isEmpty ? nil : value
    }

    static let headers: [String?] = [
        nil, "", "b", "bearer", "bearer ", "Bearer", "Bearer ", "bearer x", "Bearer dev-events-token", "BEARER dev-events-token",
        "bEaReR  \t token \t ", "Bearer\ttoken", "Bearer\u{0}token", "bearer\u{0} token", "Basic dXNlcjpwYXNz", "Bearerx token",
        "bearer \t\t", "Bearer a b", "  Bearer token", "Bearer token\u{0B}", "Bearer token\u{0C}", "@earer token", "Bearer tok\u{7F}en",
        "Bearer \u{00A0}token\u{2003}", "Bearer \u{301}token", "ｂearer token", "Bearer tökén", "Bearer \u{1F600}",
        "\u{212A}earer token", "Bearer" + String(repeating: " ", count: 300) + "t",
    ]

    @Test func everyHeaderGivesWhatReadingItByCharactersGave() {
        for header in Self.headers {
            #expect(RouteAuthenticator.bearer(header) == Self.byCharacters(header), "\(String(reflecting: header))")
        }
        #expect(RouteAuthenticator.bearer("bEaReR  \t token \t ") == "token")
        #expect(RouteAuthenticator.bearer("Bearer \u{00A0}token\u{2003}") == "token", "beyond ASCII, Foundation's white space")
    }

    @Test func tokensCompareWholeAndATokenRouteNamesItsCallerByTheTokensDigest() async throws {
        #expect(RouteAuthenticator.constantTimeEquals("dev-events-token".utf8, "dev-events-token".utf8))
        #expect(!RouteAuthenticator.constantTimeEquals("dev-events-token".utf8, "dev-events-tokem".utf8))
        #expect(!RouteAuthenticator.constantTimeEquals("dev-events-token".utf8, "dev-events-token2".utf8))
        #expect(!RouteAuthenticator.constantTimeEquals("".utf8, "x".utf8))
        let authenticator = RouteAuthenticator()
        #expect(try await authenticator.authenticate(.token("dev-events-token"), authorization: "Bearer dev-events-token") == nil)
        await #expect(throws: RouteError.self) {
            try await authenticator.authenticate(.token("dev-events-token"), authorization: "Bearer dev-events-toke")
        }
        await #expect(throws: RouteError.self) { try await authenticator.authenticate(.token("dev-events-token"), authorization: nil) }
        await #expect(throws: RouteError.self) { try await authenticator.authenticate(.token(""), authorization: "Bearer ") }
        // The principal: the first 8 bytes of the token's SHA-256, the same on every call.
        let first = RouteAuthenticator.principal(.token("dev-events-token"), user: nil)
        #expect(first.hasPrefix("token:") && first.count == "token:".count + 16)
        #expect(RouteAuthenticator.principal(.token("dev-events-token"), user: nil) == first)
        #expect(RouteAuthenticator.principal(.token("another-token"), user: nil) != first)
        for index in 0..<300 { _ = RouteAuthenticator.principal(.token("token-\(index)"), user: nil) }
        #expect(RouteAuthenticator.principal(.token("dev-events-token"), user: nil) == first, "after the table started over")
    }

    /// Two configured tokens that Swift's `String` calls equal (canonically equivalent) but that
    /// differ in bytes are two callers: each keeps its own principal, whichever is seen first
    /// (found by review: a table keyed by `String` gave the second the first one's).
    @Test func canonicallyEquivalentTokensAreTwoCallers() {
        let composed = "token-caf\u{E9}-\u{212A}"
        let decomposed = "token-cafe\u{301}-K"
        #expect(composed == decomposed && Array(composed.utf8) != Array(decomposed.utf8), "the premise")
        let first = RouteAuthenticator.principal(.token(composed), user: nil)
        let second = RouteAuthenticator.principal(.token(decomposed), user: nil)
        #expect(first != second)
        #expect(RouteAuthenticator.principal(.token(composed), user: nil) == first)
        #expect(RouteAuthenticator.principal(.token(decomposed), user: nil) == second)
    }

    struct Claims: JWTPayload {
        var sub: SubjectClaim
        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }

    /// The same for JWT secrets: a token signed with one secret does not verify on a route whose
    /// secret is canonically equivalent to it but other bytes (an HMAC key is made of bytes).
    @Test func aJWTSignedWithOneSecretDoesNotVerifyUnderAnEquivalentOne() async throws {
        let composed = "a-shared-secret-of-enough-length-caf\u{E9}"
        let decomposed = "a-shared-secret-of-enough-length-cafe\u{301}"
        #expect(composed == decomposed && Array(composed.utf8) != Array(decomposed.utf8), "the premise")
        let signer = JWTKeyCollection()
        await signer.add(hmac: HMACKey(from: composed), digestAlgorithm: .sha256)
        let token = try await signer.sign(Claims(sub: .init(value: "ann")))
        let authenticator = RouteAuthenticator()
        #expect(try await authenticator.authenticate(.jwt(secret: composed, userClaim: "sub"), authorization: "Bearer \(token)") == "ann")
        await #expect(throws: RouteError.self) {
            try await authenticator.authenticate(.jwt(secret: decomposed, userClaim: "sub"), authorization: "Bearer \(token)")
        }
    }
}
