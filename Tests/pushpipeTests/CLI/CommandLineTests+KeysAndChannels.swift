import Crypto
import Foundation
import PushPipeCore
import PushPipeTesting
import Testing

/// `pushpipe apns channels` against the APNs stand-in (which checks the provider token and
/// keeps channels as Apple documents them), and `pushpipe vapid`.
extension CommandLineTests {
    @Test func channelsAreCreatedListedReadAndDeleted() async throws {
        let directory = try TemporaryDirectory("channels")
        let (standIn, environment) = try await APNsStandIn.startWithThrowawayCredentials(in: directory, teamID: "TEAM123456", keyID: "KEY1234567")
        try await withCleanup(
            {
                let common = ["--bundle-id", "com.example.pager", "--base-url", standIn.baseURL, "--ca-file", directory.file("ca.pem")]
                let created = try await pushpipe(["apns", "channels", "create", "--store-latest"] + common, in: directory, environment: environment)
                #expect(created.status == 0, "\(created.errors)")
                let channel = try #require(created.output.last)
                #expect(standIn.channels == [channel])
                let request = try #require(standIn.requests.first)
                #expect(request.path == "/1/apps/com.example.pager/channels")
                #expect(request.tokenIssuedAt != nil, "signed with the .p8 key")
                #expect(request.body == ["message-storage-policy": 1, "push-type": "LiveActivity"])

                let listed = try await pushpipe(["apns", "channels", "list"] + common, in: directory, environment: environment)
                #expect(listed.output == [channel])
                let read = try await pushpipe(["apns", "channels", "read", channel] + common, in: directory, environment: environment)
                #expect(try JSON.parse(read.output.joined()) == ["message-storage-policy": 1, "push-type": "LiveActivity"])
                let deleted = try await pushpipe(["apns", "channels", "delete", channel] + common, in: directory, environment: environment)
                #expect(deleted.status == 0)
                #expect(standIn.channels.isEmpty)

                let again = try await pushpipe(["apns", "channels", "delete", channel] + common, in: directory, environment: environment)
                #expect(again.status == 1)
                #expect(again.errors.contains { $0.contains("400 ChannelNotRegistered") }, "\(again.errors)")
            },
            cleanup: {
                await standIn.stop()
                directory.remove()
            }
        )
    }

    @Test func vapidGenerateWritesAPrivateFileAndPrintsItsPublicKey() async throws {
        let directory = try TemporaryDirectory("vapid")
        defer { directory.remove() }
        let generated = try await pushpipe(["vapid", "generate", "vapid.pem"], in: directory)
        #expect(generated.status == 0)
        let attributes = try FileManager.default.attributesOfItem(atPath: directory.file("vapid.pem"))
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        let pem = try String(contentsOfFile: directory.file("vapid.pem"), encoding: .utf8)
        let key = try P256.Signing.PrivateKey(pemRepresentation: pem)
        let publicKey = key.publicKey.x963Representation.base64URLEncodedString()
        #expect(generated.output.contains("applicationServerKey: \(publicKey)"))
        #expect(!generated.output.joined().contains("PRIVATE KEY"), "the key itself is never printed")
        let printed = try await pushpipe(["vapid", "public-key", "vapid.pem"], in: directory)
        #expect(printed.output == [publicKey])
        let refused = try await pushpipe(["vapid", "generate", "vapid.pem"], in: directory)
        #expect(refused.status != 0, "an existing key is never replaced")
        #expect(try String(contentsOfFile: directory.file("vapid.pem"), encoding: .utf8) == pem)
    }
}
