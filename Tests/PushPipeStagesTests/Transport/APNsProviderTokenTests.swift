import Crypto
import Foundation
import PushPipeTesting
import Synchronization
import Testing

@testable import PushPipeStages

@Suite struct APNsProviderTokenTests {
    final class Clock: Sendable {
        let now = Mutex(Date(timeIntervalSince1970: 1_758_474_000))
        func advance(minutes: Double) { now.withLock { $0 = $0.addingTimeInterval(minutes * 60) } }
        var date: Date { now.withLock { $0 } }
    }

    func decode(_ part: Substring) throws -> [String: Any] {
        var base64 = part.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        return try JSONSerialization.jsonObject(with: try #require(Data(base64Encoded: base64))) as? [String: Any] ?? [:]
    }

    @Test func tokenIsES256WithNumericIssuedAtAndRawSignature() async throws {
        let key = P256.Signing.PrivateKey()
        let clock = Clock()
        let provider = try await APNsProviderToken(pem: key.pemRepresentation, keyID: "KEY1234567", teamID: "TEAM123456", now: { clock.date })
        let parts = try await provider.token().split(separator: ".")
        try #require(parts.count == 3)
        let header = try decode(parts[0])
        #expect(header["alg"] as? String == "ES256")
        #expect(header["kid"] as? String == "KEY1234567")
        let claims = try decode(parts[1])
        #expect(claims["iss"] as? String == "TEAM123456")
        #expect(claims["iat"] as? Int == 1_758_474_000)
        var signature = String(parts[2]).replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while signature.count % 4 != 0 { signature += "=" }
        let raw = try #require(Data(base64Encoded: signature))
        #expect(raw.count == 64, "raw r||s, not DER")
        #expect(key.publicKey.isValidSignature(try P256.Signing.ECDSASignature(rawRepresentation: raw), for: Data("\(parts[0]).\(parts[1])".utf8)))
    }

    @Test func tokenIsReusedForItsLifetimeThenRenewed() async throws {
        let clock = Clock()
        let provider = try await APNsProviderToken(pem: P256.Signing.PrivateKey().pemRepresentation, keyID: "K", teamID: "T", now: { clock.date })
        let first = try await provider.token()
        clock.advance(minutes: 49)
        #expect(try await provider.token() == first)
        clock.advance(minutes: 2)
        let second = try await provider.token()
        #expect(second != first)
        #expect(provider.issuedAt == clock.date)
    }

    @Test func expiredTokenIsReplacedButNotInALoop() async throws {
        let clock = Clock()
        let provider = try await APNsProviderToken(pem: P256.Signing.PrivateKey().pemRepresentation, keyID: "K", teamID: "T", now: { clock.date })
        let first = try await provider.token()
        #expect(provider.invalidate())
        let second = try await provider.token()
        #expect(second != first)
        #expect(provider.invalidate() == false, "a second forced refresh within a minute is refused")
        #expect(try await provider.token() == second)
        clock.advance(minutes: 1.5)
        #expect(provider.invalidate())
    }

    /// Concurrent refreshes share one signed token: ECDSA signatures are randomized, so each
    /// would sign a different one, and APNs answers a switch between them with
    /// TooManyProviderTokenUpdates.
    @Test func concurrentCallersShareOneSigning() async throws {
        let clock = Clock()
        let provider = try await APNsProviderToken(pem: P256.Signing.PrivateKey().pemRepresentation, keyID: "K", teamID: "T", now: { clock.date })
        for round in 0..<2 {
            let gate = Gate()
            let tokens = await withTaskGroup(of: String?.self, returning: Set<String>.self) { group in
                for _ in 0..<64 {
                    group.addTask {
                        await gate.wait()
                        return try? await provider.token()
                    }
                }
                // Every caller asks at once: all of them find the cache empty.
                while gate.waiting < 64 { await Task.yield() }
                gate.open()
                var tokens = Set<String>()
                for await token in group { if let token { tokens.insert(token) } }
                return tokens
            }
            #expect(tokens.count == 1, "round \(round): \(tokens.count) different tokens for one refresh")
            clock.advance(minutes: 51)
        }
    }
}
