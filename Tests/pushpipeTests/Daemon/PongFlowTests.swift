import Foundation
import PushPipeTesting
import Testing
import _CryptoExtras

/// The Pong notifications over FCM end to end: the shipped pong.yaml in the real daemon, FCM
/// + OAuth stand-in, JWT users, the simulator CLI as its own process.
@Suite struct PongFlowTests {
    static let user = "62cc403b99efc110a9a73a55"

    @Test func registerSendSimulateAndReadHistory() async throws {
        let directory = try TemporaryDirectory("pong")
        defer { directory.remove() }
        let key = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        let authority = try TestCertificateAuthority()
        try authority.writeCACertificate(to: directory.file("ca.pem"))
        let fcm = try await FCMStandIn.start(publicKey: key.publicKey, clientEmail: "pong@pong.iam.gserviceaccount.com", authority: authority)
        try await withCleanup(
            {
                try directory.write(
                    "sa.json",
                    FCMStandIn.serviceAccount(
                        privateKey: key,
                        clientEmail: "pong@pong.iam.gserviceaccount.com",
                        projectID: "pong-app",
                        tokenURI: fcm.tokenURI
                    )
                )
                try directory.write(
                    "pipelines/pong.yaml",
                    try String(contentsOf: SvenFlowTests.repository.appendingPathComponent("pipelines/pong.yaml"), encoding: .utf8)
                )
                try await flow(directory: directory, fcm: fcm)
            },
            cleanup: fcm.stop
        )
    }

    func flow(directory: TemporaryDirectory, fcm: FCMStandIn) async throws {
        let environment = [
            "PONG_JWT_SECRET": HTTPHostTests.secret, "PONG_EVENTS_TOKEN": "pong-backend-secret",
            "GOOGLE_APPLICATION_CREDENTIALS": directory.file("sa.json"),
            "FCM_BASE_URL": fcm.baseURL, "PUSHPIPE_CA_FILE": directory.file("ca.pem"),
        ]
        let user = try await HTTPHostTests.bearer(Self.user)
        try await DaemonProcess.run(
            arguments: ["run", "--listen", "127.0.0.1:0", "--state", "state.sqlite", "--plugins", "none"],
            directory: directory.path,
            environment: environment
        ) { daemon in
            let client = HTTPTestClient(port: try await daemon.port())
            #expect(
                try await client.request("POST", "/api/notifications/register", json: ["fcm_token": "SSLCOPWPPPei40330dndlspfjiwofjio"]).status == 401
            )
            #expect(
                try await client.request(
                    "POST",
                    "/api/notifications/register",
                    json: ["fcm_token": "SSLCOPWPPPei40330dndlspfjiwofjio"],
                    headers: user
                ).status == 200
            )

            // The backend's events, then the simulator (a separate process on the same store).
            let backend = ["authorization": "Bearer pong-backend-secret"]
            let upvote = try await client.request(
                "POST",
                "/api/notifications/events",
                json: ["user": .string(Self.user), "type": "upvote", "resource": "/posts/DTF42069", "title": "Upvoted", "body": "Nice"],
                headers: backend
            )
            #expect(upvote.status == 202)
            let upvoteID = try #require(upvote.body?["id"]?.stringValue)
            #expect(upvote.headers["location"] == "/api/notifications/events/\(upvoteID)")
            let sent = try #require(try await fcm.waitForSends(1).first)
            // Its status, for the backend that posted it, with FCM's message name.
            let status = try await eventually("the upvote's status to be delivered") {
                let status = try await client.request("GET", "/api/notifications/events/\(upvoteID)", headers: backend)
                return status.body?["state"] == "delivered" ? status : nil
            }
            #expect(status.body?["recipients"]?[0]?["transport"] == "fcm")
            #expect(status.body?["recipients"]?[0]?["provider_id"]?.stringValue?.hasPrefix("projects/pong-app/messages/") == true, "\(sent)")
            #expect(
                try await client.request("GET", "/api/notifications/events/\(upvoteID)", headers: user).status == 401,
                "a user's JWT is no backend token"
            )
            try await DaemonProcess.run(
                arguments: [
                    "simulate", "-u", Self.user, "-t", "generic", "-r", "/", "-h", "Hello World", "-b", "Goodbye World",
                    "--state", "state.sqlite",
                ],
                directory: directory.path,
                environment: environment
            ) { simulate in
                let status = try await simulate.waitForExit()
                #expect(status == 0, "\(simulate.standardOutput) \(simulate.standardError.suffix(5))")
                #expect(
                    simulate.standardOutput.contains { $0.hasPrefix("delivered: projects/pong-app/messages/") },
                    "the simulator prints the FCM name"
                )
            }
            let simulated = try #require(try await fcm.waitForSends(2).last)
            #expect(simulated.message?["data"]?["url"] == "https://pong.college/")
            #expect(simulated.message?["notification"] == ["title": "Hello World", "body": "Goodbye World"])
            #expect(
                try await client.request(
                    "POST",
                    "/api/notifications/events",
                    json: ["user": .string(Self.user), "type": "generic", "title": "No link", "body": "b"],
                    headers: backend
                ).status == 202
            )
            try await fcm.waitForSends(3)
            try await eventually("the third notification in the history") {
                try await client.request("GET", "/api/notifications/history?limit=10", headers: user).body?["history"]?.arrayValue?.count == 3
            }

            // History: newest first, null url kept, pages with ?limit=&before=.
            let page = try await client.request("GET", "/api/notifications/history?limit=2", headers: user)
            let entries = try #require(page.body?["history"]?.arrayValue)
            try #require(entries.count == 2)
            #expect(entries[0]["notification"]?["title"] == "No link")
            #expect(entries[0]["data"]?["url"] == .null, "a null url is recorded as null")
            #expect(entries[0]["data"]?["type"] == "generic")
            #expect(entries[1]["notification"]?["title"] == "Hello World")
            let before = try #require(page.body?["next_before"]?.intValue)
            let rest = try await client.request("GET", "/api/notifications/history?limit=2&before=\(before)", headers: user)
            #expect(rest.body?["history"]?.arrayValue?.map { $0["notification"]?["title"] } == ["Upvoted"])
            #expect(rest.body?["next_before"] == .null)

            // Switched off: nothing is sent, nothing queued.
            #expect(try await client.request("PATCH", "/api/notifications/settings", json: ["enabled": false], headers: user).status == 200)
            try await DaemonProcess.run(
                arguments: ["simulate", "-u", Self.user, "-t", "upvote", "--state", "state.sqlite"],
                directory: directory.path,
                environment: environment
            ) { simulate in
                let status = try await simulate.waitForExit()
                #expect(status == 1)
                #expect(simulate.standardOutput.contains { $0.contains("filtered") })
            }
            #expect(fcm.sends.count == 3)
        }
    }
}
