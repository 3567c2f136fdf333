import Foundation
import JWTKit
import PushPipeCore

/// What a transport's key file holds, checked when its configuration is loaded (`pushpipe
/// validate`, a daemon's start or reload).
///
/// The key itself is still loaded when the pipeline starts. But a file of the wrong kind (the
/// APNs `.p8` and FCM's service-account JSON swapped) would leave the daemon not ready, so it
/// is a configuration error naming the key. A file that is not there yet is
/// no error here (a secret mounted at start, a validation on another machine): the daemon
/// reports it at start.
enum CredentialFile {
    /// What the file at a path looks like.
    enum Content: Equatable {
        case unreadable
        case pemKey
        case serviceAccount
        case other
    }

    static func content(at path: String) -> (Content, Data?) {
        guard let data = FileManager.default.contents(atPath: path) else { return (.unreadable, nil) }
        let text = String(decoding: data.prefix(4096), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        if text.hasPrefix("-----BEGIN ") { return (.pemKey, data) }
        if text.hasPrefix("{"), (try? JSON.parse(data))?["type"]?.stringValue == "service_account" { return (.serviceAccount, data) }
        return (.other, data)
    }

    /// An APNs signing key (`key_path`): a PKCS#8 P-256 key in PEM, as Apple issues it.
    static func checkAPNsKey(at path: String) throws {
        let (content, data) = content(at: path)
        let expected = "the .p8 key from Apple (a PKCS#8 P-256 key in PEM)"
        switch content {
        case .unreadable:
            return
        case .serviceAccount:
            throw ConfigurationValueError(
                keyPath: "key_path",
                "'\(path)' is a Google service account (FCM's credentials_file), not an APNs key",
                expected: expected
            )
        case .other:
            throw ConfigurationValueError(keyPath: "key_path", "'\(path)' is not a PEM key", expected: expected)
        case .pemKey:
            do {
                _ = try ES256PrivateKey(pem: String(decoding: data ?? Data(), as: UTF8.self))
            } catch {
                throw ConfigurationValueError(keyPath: "key_path", "'\(path)' is not a P-256 private key (\(error))", expected: expected)
            }
        }
    }

    /// A Google service account (`credentials_file`): JSON with the fields FCM needs.
    static func checkServiceAccount(at path: String) throws {
        let expected = "a service-account JSON file from the Firebase console"
        switch content(at: path).0 {
        case .unreadable:
            return
        case .pemKey:
            throw ConfigurationValueError(
                keyPath: "credentials_file",
                "'\(path)' is a PEM key (an APNs .p8 key?), not a service account",
                expected: expected
            )
        case .serviceAccount, .other:
            do {
                _ = try GoogleServiceAccount.load(path: path)
            } catch let error as StageError {
                throw ConfigurationValueError(keyPath: "credentials_file", "'\(path)': \(error.message)", expected: expected)
            }
        }
    }
}
