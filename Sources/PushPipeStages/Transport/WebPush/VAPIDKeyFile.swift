import Crypto
import Foundation
import PushPipeCore

/// The VAPID key pair on disk: a PKCS#8 PEM, written with mode 0600 (it signs as the
/// application server; whoever has it can push to every subscriber).
public enum VAPIDKeyFile {
    public struct Unreadable: Error, CustomStringConvertible {
        public var path: String
        public var description: String { "cannot read a P-256 private key (PEM) at \(path)" }
    }

    static func read(path: String) throws -> P256.Signing.PrivateKey {
        guard let data = FileManager.default.contents(atPath: path), let pem = String(data: data, encoding: .utf8),
            let key = try? P256.Signing.PrivateKey(pemRepresentation: pem)
        else { throw Unreadable(path: path) }
        return key
    }

    /// Writes a new key pair; refuses to replace an existing file.
    public static func generate(path: String) throws -> String {
        let key = P256.Signing.PrivateKey()
        guard FileManager.default.createFile(atPath: path, contents: Data(key.pemRepresentation.utf8), attributes: [.posixPermissions: 0o600]) else {
            throw Unreadable(path: path)
        }
        return applicationServerKey(key)
    }

    /// The base64url uncompressed public key a page passes to `pushManager.subscribe`.
    public static func publicKey(path: String) throws -> String {
        applicationServerKey(try read(path: path))
    }

    static func applicationServerKey(_ key: P256.Signing.PrivateKey) -> String {
        key.publicKey.x963Representation.base64URLEncodedString()
    }
}
