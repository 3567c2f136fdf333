import Crypto
import Foundation
import PushPipeCore
import PushPipeTesting
import Testing

@testable import PushPipeStages

/// PyPI's reference implementations read what pushpipe writes: `http_ece` decrypts the body
/// (RFC 8291/8188) with the browser's private key, `py_vapid` verifies the VAPID token (RFC
/// 8292). Neither shares code with pushpipe or its stand-in.
@Suite struct WebPushPeerTests {
    static let reader = #"""
        import base64, json, sys
        import http_ece, py_vapid.jwt
        from cryptography.hazmat.primitives.asymmetric import ec
        def b64(text): return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        given = json.load(open(sys.argv[1]))
        browser = ec.derive_private_key(int.from_bytes(b64(given["browser_private"]), "big"), ec.SECP256R1())
        plaintext = http_ece.decrypt(b64(given["body"]), private_key=browser, auth_secret=b64(given["auth"]), version="aes128gcm")
        claims = py_vapid.jwt.decode(given["token"], given["key"])
        print(json.dumps({"plaintext": plaintext.decode("utf-8"), "claims": claims}))
        """#

    @Test func httpECEDecryptsAndPyVAPIDVerifies() async throws {
        guard await hasModules() else { return }
        let directory = try TemporaryDirectory("webpush-peer")
        defer { directory.remove() }
        let browser = P256.KeyAgreement.PrivateKey()
        let auth = Data((0..<16).map { _ in UInt8.random(in: 0...255) })
        let message = #"{"title":"Your turn","body":"in Game 1 é 🎉"}"#
        let body = try WebPushEncryption(p256dh: browser.publicKey.x963Representation, auth: auth).encrypt(Data(message.utf8))
        let signer = VAPIDSigner(key: P256.Signing.PrivateKey(), subject: "mailto:ops@example.com")
        let header = try signer.authorization(for: "https://push.example.net")
        let parts = header.dropFirst("vapid ".count).split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        let token = String(parts[0].dropFirst(2))
        let key = String(parts[1].dropFirst(2))
        let given: JSON = [
            "browser_private": .string(browser.rawRepresentation.base64URLEncodedString()), "auth": .string(auth.base64URLEncodedString()),
            "body": .string(body.base64URLEncodedString()), "token": .string(token), "key": .string(key),
        ]
        let input = try directory.write("given.json", given.compactText)
        let script = try directory.write("reader.py", Self.reader)
        let output = try await DaemonProcess.run(arguments: [], directory: directory.path, launcher: ["/usr/bin/env", "python3", script, input]) {
            peer in
            let status = try await peer.waitForExit()
            #expect(status == 0)
            return peer.standardOutput.joined()
        }
        let read = try JSON.parse(output)
        #expect(read["plaintext"]?.stringValue == message)
        #expect(read["claims"]?["aud"] == "https://push.example.net")
        #expect(read["claims"]?["sub"] == "mailto:ops@example.com")
        let expires = try #require(read["claims"]?["exp"]?.doubleValue)
        #expect(expires > Date().timeIntervalSince1970 && expires <= Date().timeIntervalSince1970 + 24 * 3600)
    }

    func hasModules() async -> Bool {
        let found =
            (try? await DaemonProcess.run(arguments: [], directory: "/", launcher: ["/usr/bin/env", "python3", "-c", "import http_ece, py_vapid"]) {
                try await $0.waitForExit()
            }) == 0
        if !found { Issue.record("this test's peers need PyPI's http_ece and py_vapid (pip install http_ece py_vapid; .ci/run installs them)") }
        return found
    }
}
