import Foundation
import PushPipeCore

/// The fields of a Google service-account JSON file (`GOOGLE_APPLICATION_CREDENTIALS`) that
/// FCM needs. The private key is kept in memory only and never printed.
struct GoogleServiceAccount: Sendable {
    var projectID: String
    var clientEmail: String
    var privateKeyID: String?
    var privateKeyPEM: String
    var tokenURI: String

    static func load(path: String) throws -> GoogleServiceAccount {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw StageError(.unavailable, stage: "transport", "cannot read the service account file (credentials_file)")
        }
        let json: JSON
        do {
            json = try JSON.parse(data)
        } catch {
            throw StageError(.unavailable, stage: "transport", "the service account file is not JSON")
        }
        func field(_ name: String) throws -> String {
            guard let value = json[name]?.stringValue, !value.isEmpty else {
                throw StageError(.unavailable, stage: "transport", "the service account file has no '\(name)'")
            }
            return value
        }
        return GoogleServiceAccount(
            projectID: try field("project_id"),
            clientEmail: try field("client_email"),
            privateKeyID: json["private_key_id"]?.stringValue,
            privateKeyPEM: try field("private_key"),
            tokenURI: json["token_uri"]?.stringValue ?? "https://oauth2.googleapis.com/token"
        )
    }
}
