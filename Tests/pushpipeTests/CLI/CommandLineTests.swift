import Foundation
import GRDB
import PushPipeCore
import PushPipeSQLite
import PushPipeTesting
import Testing

/// The CLI as a user runs it: the real binary, real files.
@Suite struct CommandLineTests {
    func pushpipe(
        _ arguments: [String],
        in directory: TemporaryDirectory,
        environment: [String: String] = [:]
    ) async throws
        -> (status: Int32, output: [String], errors: [String])
    {
        try await DaemonProcess.run(arguments: arguments, directory: directory.path, environment: environment) { process in
            let status = try await process.waitForExit()
            return (status, process.standardOutput, process.standardError)
        }
    }

    @Test func validateReportsEveryFileAndFailsOnErrors() async throws {
        let directory = try TemporaryDirectory("cli")
        defer { directory.remove() }
        try directory.write(
            "pipelines/good.yaml",
            "pipeline: good\nsources: [{type: http.event, path: /e}]\nrenderer: {type: json.template, payload: {}}\ntransport: {type: stdout}\n"
        )
        try directory.write(
            "pipelines/bad.yaml",
            "pipeline: bad\nsources: [{type: http.evnt, path: /f}]\nrenderer: {type: json.template, payload: {}}\ntransport: {type: stdout}\n"
        )
        let result = try await pushpipe(["validate", "pipelines", "--plugins", "none"], in: directory)
        #expect(result.status == 1)
        #expect(result.output.contains("ok pipelines/good.yaml"))
        #expect(result.output.contains { $0.hasPrefix("pipelines/bad.yaml:2:18: error: sources[0].type: unknown source type 'http.evnt'") })
        let stages = try await pushpipe(["stages", "--plugins", "none"], in: directory)
        #expect(stages.status == 0)
        #expect(
            stages.output.contains { $0.contains("ogs.poller") }
                && stages.output.contains { $0.contains("token_lifetime (duration, 20m to 1h; default 3000)") }
        )
    }

    /// The routes as OpenAPI 3.1, from the shipped pipelines and without their secrets
    /// (`.ci/check-openapi` validates the document and runs schemathesis against a daemon).
    /// A timeout no `Duration` holds is refused with the option's name, not a crash at start.
    @Test func runRefusesARequestTimeoutThatIsNotADuration() async throws {
        let directory = try TemporaryDirectory("request-timeout")
        defer { directory.remove() }
        for value in ["inf", "1e300", "0.5", "soon"] {
            let result = try await pushpipe(["run", "--dry-run", "--request-timeout", value, "--listen", "127.0.0.1:0"], in: directory)
            #expect(result.status == 64, "\(value): \(result.errors.suffix(3))")
            #expect(result.errors.contains { $0.contains("--request-timeout must be a duration") }, "\(value): \(result.errors.suffix(3))")
        }
    }

    @Test func openapiDescribesTheShippedPipelinesRoutes() async throws {
        let directory = try TemporaryDirectory("openapi")
        defer { directory.remove() }
        let result = try await pushpipe(
            [
                "openapi", Repository.root.appendingPathComponent("pipelines").path, "--plugins",
                Repository.root.appendingPathComponent("plugins.d").path,
            ],
            in: directory
        )
        #expect(result.status == 0, "\(result.errors)")
        let document = try JSON.parse(result.output.joined(separator: "\n"))
        #expect(document["openapi"] == "3.1.0")
        let events = try #require(document["paths"]?["/api/notifications/events"]?["post"])
        #expect(events["security"] == [["backendToken": []]])
        #expect(events["responses"]?["202"]?["headers"]?["location"] != nil)
        #expect(events["responses"]?["429"]?["$ref"] == "#/components/responses/TooManyRequests")
        #expect(events["responses"]?["409"]?["description"]?.stringValue?.contains("Idempotency-Key") == true, "the route reads the key")
        #expect(events["requestBody"]?["content"]?["application/json"]?["schema"]?["required"] == ["user"])
        #expect(document["paths"]?["/api/notifications/events/{id}"]?["get"]?["parameters"]?[0]?["in"] == "path")
        let register = try #require(document["paths"]?["/api/notifications/register"]?["post"])
        #expect(register["security"] == [["userJWT": []]])
        #expect(register["responses"]?["409"] == nil, "a route that reads no Idempotency-Key answers no 409 for it")
        #expect(register["requestBody"]?["content"]?["application/json"]?["schema"]?["properties"]?["fcm_token"]?["maxLength"] == 4096)
        #expect(document["paths"]?["/check/{user_id}"]?["get"]?["parameters"]?[0]?["schema"]?["pattern"] == "^[0-9]{1,20}$")
        #expect(document["components"]?["schemas"]?["Error"]?["required"] == ["error"])
        // A kind's own refusals say what they mean there, not what the generic 409 means.
        let channels = try #require(document["paths"]?["/api/groups/channels"]?["post"])
        #expect(channels["responses"]?["409"]?["description"]?.stringValue?.contains("dry run") == true, "\(channels)")
        #expect(channels["responses"]?["502"]?["description"]?.stringValue?.contains("APNs refused") == true)
        let deleteChannels = try #require(document["paths"]?["/api/groups/channels/{group}"]?["delete"])
        #expect(deleteChannels["responses"]?["409"]?["description"]?.stringValue?.contains("dry run") == true)
        #expect(!result.output.joined().contains("secret"), "no secret value in the document")
    }

    @Test func dryRunPrintsTheRequestsAndChangesNothing() async throws {
        let directory = try TemporaryDirectory("cli")
        defer { directory.remove() }
        let pipeline = try String(contentsOf: Repository.root.appendingPathComponent("pipelines/sven-replies.yaml"), encoding: .utf8)
        try directory.write("pipelines/sven-replies.yaml", pipeline)
        do {
            let store = try SQLiteStore(path: directory.file("state.sqlite"))
            try await store.pipeline("sven-replies").register(
                DeviceToken(user: "install-1", kind: "device", value: String(repeating: "ab", count: 32)),
                environment: nil,
                replace: false
            )
            try await store.close()
        }
        let reply = try directory.write("replies/r1.json", #"{"message_id": "m-1", "text": "hello from the dry run"}"#)
        let before = try Data(contentsOf: URL(fileURLWithPath: directory.file("state.sqlite")))
        // No --event: the reply folder source runs once; no credentials are needed.
        let result = try await pushpipe(
            ["dry-run", "sven-replies", "--state", "state.sqlite", "--plugins", "none"],
            in: directory,
            environment: ["SVEN_REPLY_DIR": directory.file("replies")]
        )
        #expect(result.status == 0, "\(result.errors.suffix(5))")
        #expect(result.output.contains { $0.contains("POST https://api.push.apple.com/3/device/abababab…") })
        #expect(result.output.contains { $0.contains("\"body\": \"hello from the dry run\"") })
        #expect(result.output.contains("result: delivered"))
        #expect(FileManager.default.fileExists(atPath: reply), "nothing is moved to sent/")
        #expect(try Data(contentsOf: URL(fileURLWithPath: directory.file("state.sqlite"))) == before, "the state file is untouched")

        try directory.write("event.json", #"{"body": {"message_id": "m-2", "text": "from a file"}}"#)
        let fromFile = try await pushpipe(
            ["dry-run", "pipelines/sven-replies.yaml", "--event", "event.json", "--state", "state.sqlite", "--plugins", "none"],
            in: directory,
            environment: ["SVEN_REPLY_DIR": directory.file("replies")]
        )
        #expect(fromFile.status == 0)
        #expect(fromFile.output.contains { $0.contains("\"message_id\": \"m-2\"") })
    }

    /// The shipped `_test.yaml` cases pass on a machine that runs the daemon (its APNs and
    /// bundle-id variables exported), and `validate DIR` from another directory finds the
    /// plugins beside DIR.
    @Test func pipelineTestsAndValidationDoNotDependOnTheCallersShellOrDirectory() async throws {
        let deploy = try TemporaryDirectory("deploy")
        let elsewhere = try TemporaryDirectory("elsewhere")
        defer {
            deploy.remove()
            elsewhere.remove()
        }
        for folder in ["pipelines", "plugins.d"] {
            try FileManager.default.copyItem(atPath: Repository.root.appendingPathComponent(folder).path, toPath: deploy.file(folder))
        }
        let exported = [
            "APNS_BASE_URL": "https://apns.proxy.invalid:8443", "APNS_DEVELOPMENT": "true", "OGS_BUNDLE_ID": "com.other.ogs",
            "SVEN_BUNDLE_ID": "com.other.sven", "PAGER_BUNDLE_ID": "com.other.pager", "NOTIFICATION_ENVIRONMENT": "staging",
            "FCM_BASE_URL": "https://fcm.proxy.invalid", "APNS_TEAM_ID": "OTHERTEAM1",
        ]
        let tests = try await pushpipe(["test", deploy.file("pipelines")], in: elsewhere, environment: exported)
        #expect(tests.status == 0, "\(tests.output.filter { $0.hasPrefix("FAIL") || $0.hasPrefix("  ") }.prefix(10)) \(tests.errors.suffix(5))")
        #expect(tests.output.last?.hasSuffix(" 0 failed") == true)
        let validation = try await pushpipe(["validate", "--dry-run", deploy.file("pipelines")], in: elsewhere)
        #expect(validation.status == 0, "\(validation.output.suffix(5))")
        #expect(validation.output.contains("ok \(deploy.file("pipelines/example.yaml"))"), "the example's plugin is found beside the pipelines")
    }

    /// A dry run of a timing rule says when the event would go, without waiting, and keeps nothing.
    @Test func aDryRunSaysWhenAHeldEventWouldGo() async throws {
        let directory = try TemporaryDirectory("dry-run-timing")
        defer { directory.remove() }
        try directory.write(
            "pipelines/activity-digest.yaml",
            try String(contentsOf: Repository.root.appendingPathComponent("pipelines/activity-digest.yaml"), encoding: .utf8)
        )
        try directory.write(
            "event.json",
            #"{"user": "ana", "body": {"user": "ana", "post": "/p/1", "post_title": "T", "actor": "bob", "text": "hi"}}"#
        )
        let result = try await pushpipe(
            ["dry-run", "activity-digest", "--event", "event.json", "--state", "state.sqlite", "--plugins", "none"],
            in: directory,
            environment: ["ACTIVITY_TIME_ZONE": ActivityDigestTests.daytimeZone]
        )
        #expect(result.status == 0, "\(result.errors.suffix(5))")
        let line = try #require(result.output.first { $0.hasPrefix("result: ") })
        #expect(line.hasPrefix("result: batched until 20"), "\(line)")
        #expect(line.contains("opened the digest for post '/p/1'"))
    }
}
