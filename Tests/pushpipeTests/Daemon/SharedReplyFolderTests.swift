import Foundation
import PushPipeTesting
import Testing

/// Several daemons on one reply folder, as real processes.
@Suite struct SharedReplyFolderTests {
    /// Replies from `${REPLY_DIR}` as APNs alerts whose custom `message_id` lets the stand-in count them.
    static func replyPipeline(claimLease: String, concurrency: Int) -> String {
        """
        pipeline: replies
        routes:
          - {action: register, path: /register-apns, user_field: device_token, token_field: apns_token, token_kind: device, replace: true}
        sources:
          - {type: reply.folder, path: "${REPLY_DIR}", claim_lease: \(claimLease)}
        renderer: {type: apns.alert, title: Sven, body: "{{text}}", custom: {message_id: {$from: message_id}}}
        \(SharedDatabaseTests.apnsTransport)
        delivery: {concurrency: \(concurrency)}
        """
    }

    /// Registers the one install with each daemon (each keeps its own store).
    static func registerInstall(with daemons: [DaemonProcess]) async throws {
        for daemon in daemons {
            let response = try await HTTPTestClient(port: try await daemon.port())
                .request("POST", "/register-apns", json: ["device_token": "install-1", "apns_token": .string(String(repeating: "ab", count: 32))])
            #expect(response.status == 200)
        }
    }

    @Sendable func sentFiles(_ directory: TemporaryDirectory) -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: directory.file("replies/sent")))?.count ?? 0
    }

    /// Two daemons watch one reply folder (each with its own store: sharing a folder needs no
    /// database). Every reply is claimed by one of them; one is killed with SIGKILL while it
    /// holds claimed replies, and the other sends them once their claims lapse.
    @Test func daemonsSharingAReplyFolderSendEachReplyOnce() async throws {
        let directory = try TemporaryDirectory("shared-replies")
        defer { directory.remove() }
        let (apns, apnsEnvironment) = try await APNsStandIn.startWithThrowawayCredentials(in: directory, teamID: "SHAREDTEAM", keyID: "SHAREDKEY1")
        let delivered = ObservedState([String: Int]())
        apns.answer { request in
            if let id = request.body?["message_id"]?.stringValue { delivered.update { $0[id, default: 0] += 1 } }
            return .delayed(.seconds(0.05), .accept)
        }
        try directory.write("pipelines/replies.yaml", Self.replyPipeline(claimLease: "2s", concurrency: 4))
        try FileManager.default.createDirectory(atPath: directory.file("replies"), withIntermediateDirectories: true)
        let environment = apnsEnvironment.merging(["REPLY_DIR": directory.file("replies")]) { _, new in new }
        let run = { @Sendable (state: String, body: @Sendable @escaping (DaemonProcess) async throws -> Void) in
            try await DaemonProcess.run(
                arguments: ["run", "--listen", "127.0.0.1:0", "--state", state, "--plugins", "none"],
                directory: directory.path,
                environment: environment
            ) { try await body($0) }
        }
        let replies = 200
        try await withCleanup(
            {
                try await run("a.sqlite") { first in
                    try await run("b.sqlite") { second in
                        try await Self.registerInstall(with: [first, second])
                        for number in 0..<replies {
                            let staged = try directory.write("staging/r\(number).json", #"{"message_id": "m\#(number)", "text": "reply"}"#)
                            try FileManager.default.moveItem(atPath: staged, toPath: directory.file("replies/r\(number).json"))
                        }
                        try await delivered.wait(
                            timeout: 30,
                            { $0.count >= replies / 4 ? () : nil },
                            failure: { WaitTimedOut("\($0.count) delivered") }
                        )
                        first.signal(SIGKILL)
                        _ = try await first.waitForExit()
                        try await delivered.wait(
                            timeout: 60,
                            { $0.count >= replies ? () : nil },
                            failure: { WaitTimedOut("\($0.count) of \(replies) replies delivered") }
                        )
                        // A reply the killed daemon sent but had not moved yet comes back and is sent again.
                        try await eventually("every reply in sent/") { sentFiles(directory) >= replies }
                    }
                }
            },
            cleanup: apns.stop
        )
        let counts = delivered.value
        #expect(counts.count == replies, "every reply sent")
        let extra = counts.values.reduce(0) { $0 + $1 - 1 }
        #expect(extra <= 4, "a reply twice only if it was in flight at the kill (delivery.concurrency 4): \(extra)")
        #expect(sentFiles(directory) == replies, "every reply moved to sent/")
        let left = (try? FileManager.default.contentsOfDirectory(atPath: directory.file("replies")))?.filter { $0.hasSuffix(".json") } ?? []
        #expect(left.isEmpty, "nothing left in the folder: \(left.prefix(5))")
    }
}
