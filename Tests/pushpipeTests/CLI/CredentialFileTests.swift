import Crypto
import Foundation
import PushPipeCore
import PushPipeTesting
import Testing
import _CryptoExtras

/// With the APNs key and FCM's service account swapped, `pushpipe validate` must not print
/// `ok`, nor the daemon start not ready without a word in its log.
@Suite struct CredentialFileTests {
    static let apple = """
        pipeline: apple
        sources: [{type: http.event, path: /a}]
        renderer: {type: apns.alert, title: T, body: B}
        transport: {type: apns, team_id: TEAM000001, key_id: KEY0000001, key_path: "${APNS_KEY_PATH}", bundle_id: com.example.app}
        """
    static let google = """
        pipeline: google
        sources: [{type: http.event, path: /g}]
        renderer: {type: fcm.message, notification: {title: T, body: B}}
        transport: {type: fcm, credentials_file: "${FCM_CREDENTIALS}"}
        """

    func keys(in directory: TemporaryDirectory) throws {
        try directory.write("keys/AuthKey.p8", P256.Signing.PrivateKey().pemRepresentation)
        // Throwaway keys, made at run time.
        try directory.write(
            "keys/service-account.json",
            FCMStandIn.serviceAccount(
                privateKey: try _RSA.Signing.PrivateKey(keySize: .bits2048),
                clientEmail: "pushpipe@demo.iam.gserviceaccount.com",
                projectID: "demo",
                tokenURI: "https://oauth2.googleapis.com/token"
            )
        )
        try directory.write("pipelines/apple.yaml", Self.apple)
        try directory.write("pipelines/google.yaml", Self.google)
    }

    func pushpipe(
        _ arguments: [String],
        in directory: TemporaryDirectory,
        environment: [String: String]
    ) async throws
        -> (status: Int32, output: [String], errors: [String])
    {
        try await DaemonProcess.run(arguments: arguments, directory: directory.path, environment: environment) { process in
            let status = try await process.waitForExit()
            return (status, process.standardOutput, process.standardError)
        }
    }

    @Test func validateRefusesKeyFilesOfTheWrongKind() async throws {
        let directory = try TemporaryDirectory("credentials")
        defer { directory.remove() }
        try keys(in: directory)
        let right = ["APNS_KEY_PATH": "keys/AuthKey.p8", "FCM_CREDENTIALS": "keys/service-account.json"]
        let valid = try await pushpipe(["validate", "pipelines", "--plugins", "none"], in: directory, environment: right)
        #expect(valid.status == 0, "\(valid.output)")

        let swapped = ["APNS_KEY_PATH": "keys/service-account.json", "FCM_CREDENTIALS": "keys/AuthKey.p8"]
        let refused = try await pushpipe(["validate", "pipelines", "--plugins", "none"], in: directory, environment: swapped)
        #expect(refused.status == 1)
        #expect(!refused.output.contains { $0.hasPrefix("ok ") }, "\(refused.output)")
        #expect(
            refused.output.contains { $0.contains("error: transport.key_path") && $0.contains("is a Google service account") },
            "\(refused.output)"
        )
        #expect(refused.output.contains { $0.contains("error: transport.credentials_file") && $0.contains("is a PEM key") }, "\(refused.output)")

        try directory.write("keys/garbage", "not a key")
        let garbage = try await pushpipe(
            ["validate", "pipelines/apple.yaml", "--plugins", "none"],
            in: directory,
            environment: ["APNS_KEY_PATH": "keys/garbage"]
        )
        #expect(garbage.status == 1 && garbage.output.contains { $0.contains("is not a PEM key") }, "\(garbage.output)")

        // A key not there yet (mounted at start, or validated on another machine) is for the daemon to report.
        let absent = try await pushpipe(
            ["validate", "pipelines", "--plugins", "none"],
            in: directory,
            environment: ["APNS_KEY_PATH": "keys/none.p8", "FCM_CREDENTIALS": "keys/none.json"]
        )
        #expect(absent.status == 0, "\(absent.output)")
    }

    @Test func aDaemonWhoseKeyIsMissingSaysWhyItIsNotReady() async throws {
        let directory = try TemporaryDirectory("credentials")
        defer { directory.remove() }
        try keys(in: directory)
        try FileManager.default.removeItem(atPath: directory.file("pipelines/google.yaml"))
        let arguments = ["run", "--listen", "127.0.0.1:0", "--store", "sqlite:state.sqlite", "--plugins", "none"]
        try await DaemonProcess.run(arguments: arguments, directory: directory.path, environment: ["APNS_KEY_PATH": "keys/none.p8"]) { daemon in
            let line = try await daemon.waitForLine(containing: "APNs key not loaded")
            #expect(line.contains("not ready") && line.contains("key_path"), "\(line)")
            daemon.signal(SIGTERM)
            #expect(try await daemon.waitForExit() == 0)
        }
        // Swapped, the daemon does not start: the configuration is refused, naming the key.
        let swapped = try await pushpipe(arguments, in: directory, environment: ["APNS_KEY_PATH": "keys/service-account.json"])
        #expect(swapped.status != 0)
        #expect(
            (swapped.output + swapped.errors).contains { $0.contains("transport.key_path") && $0.contains("is a Google service account") },
            "\(swapped.errors.suffix(5))"
        )
    }
}
