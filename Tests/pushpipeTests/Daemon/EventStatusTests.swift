import Foundation
import PushPipeCore
import PushPipePostgresTesting
import PushPipeTesting
import Testing

/// Every notification accounted for, on real daemons and both stores: the status an accepted
/// event's `Location` points to, dead letters kept with their input, and their replay, once
/// the cause is fixed, to the recipients that did not get them.
@Suite(.serialized) struct EventStatusTests {
    static let pipeline = """
        pipeline: followed
        delivery: {attempts: 2, backoff: 50ms, max_backoff: 100ms}
        routes:
          - {action: register, path: /register, user_field: user_id, token_kind: device, token_field: device_token}
          - {action: settings, path: /settings/:user_id, user_param: user_id, keys: {enabled: boolean}}
        sources:
          - {type: http.event, path: /events, auth: {type: token, token: backend-secret}}
        filters:
          - {type: settings.enabled}
        renderer: {type: apns.alert, body: "{{text}}"}
        transport:
          type: apns
          team_id: "${APNS_TEAM_ID}"
          key_id: "${APNS_KEY_ID}"
          key_path: "${APNS_KEY_PATH}"
          bundle_id: com.example.followed
          base_url: "${APNS_BASE_URL}"
          ca_file: "${PUSHPIPE_CA_FILE}"
        """

    static let backend = ["authorization": "Bearer backend-secret"]
    static let good = String(repeating: "a1", count: 32)
    static let flaky = String(repeating: "b2", count: 32)

    /// The store for `kind`'s daemon and CLI: nil when there is no PostgreSQL server to test against.
    static func store(_ kind: IdempotentAcceptTests.StoreKind) async throws -> String? {
        switch kind {
        case .sqlite: return "sqlite:state.sqlite"
        case .postgres: return TestStores.postgresURL == nil ? nil : try await TestStores.freshPostgresURL()
        }
    }

    /// Asks the status route until the event left `accepted` and `processing` (bounded).
    static func settledStatus(_ client: HTTPTestClient, _ location: String, headers: [String: String] = backend) async throws -> JSON? {
        try await eventually("\(location) to leave accepted and processing") {
            let status = try await client.request("GET", location, headers: headers)
            guard let state = status.body?["state"]?.stringValue, state != "accepted", state != "processing" else { return nil }
            return status.body
        }
    }

    /// Two backends posting to one pipeline through sources of their own, each with its own
    /// token: one cannot read the other's events, since each token is a principal of its own.
    @Test func aSecondSourcesTokenReadsNoneOfTheFirstSourcesEvents() async throws {
        let directory = try TemporaryDirectory("status-principal")
        defer { directory.remove() }
        try directory.write(
            "pipelines/shared.yaml",
            """
            pipeline: shared
            sources:
              - {type: http.event, key: pong, path: /pong/events, user_field: user, auth: {type: token, token: pong-backend-secret}}
              - {type: http.event, key: partner, path: /partner/events, user_field: user, auth: {type: token, token: partner-backend-secret}}
            renderer: {type: json.template, payload: {text: "{{text}}"}}
            transport: {type: stdout}
            """
        )
        let arguments = ["run", "--listen", "127.0.0.1:0", "--admin-listen", "off", "--store", "sqlite:state.sqlite", "--plugins", "none"]
        try await DaemonProcess.run(arguments: arguments, directory: directory.path) { daemon in
            let client = HTTPTestClient(port: try await daemon.port())
            let pong = ["authorization": "Bearer pong-backend-secret"]
            let partner = ["authorization": "Bearer partner-backend-secret"]
            let accepted = try await client.request("POST", "/pong/events", json: ["user": "ann", "text": "private"], headers: pong)
            #expect(accepted.status == 202)
            let id = try #require(accepted.body?["id"]?.stringValue)
            let own = try await client.request("GET", "/pong/events/\(id)", headers: pong)
            #expect(own.status == 200 && own.body?["id"]?.stringValue == id, "\(own.status) \(own.text)")
            let probed = try await client.request("GET", "/partner/events/\(id)", headers: partner)
            #expect(probed.status == 404 && probed.body?["field"] == "id", "\(probed.status) \(probed.text)")
            #expect(!probed.text.contains("private"))
            daemon.signal(SIGTERM)
            #expect(try await daemon.waitForExit() == 0)
        }
    }

    @Test(arguments: IdempotentAcceptTests.StoreKind.allCases)
    func deliveredDroppedAndDeadLetteredEventsAndTheReplay(_ kind: IdempotentAcceptTests.StoreKind) async throws {
        guard let store = try await Self.store(kind) else { return }
        let directory = try TemporaryDirectory("status-\(kind)")
        defer { directory.remove() }
        let (apns, apnsEnvironment) = try await APNsStandIn.startWithThrowawayCredentials(in: directory, teamID: "FOLLOWTEAM", keyID: "FOLLOWKEY1")
        try directory.write("pipelines/followed.yaml", Self.pipeline)
        // The flaky device's APNs answers 500 until the test fixes it.
        let fixed = ObservedState(false)
        apns.answer { request in
            request.token == Self.flaky && !fixed.value ? .reject(status: 500, reason: "InternalServerError") : .accept
        }
        try await withCleanup(
            {
                try await DaemonProcess.run(
                    arguments: ["run", "--listen", "127.0.0.1:0", "--store", store, "--plugins", "none"],
                    directory: directory.path,
                    environment: apnsEnvironment
                ) { daemon in
                    let client = HTTPTestClient(port: try await daemon.port())
                    for (user, token) in [("u", Self.good), ("u", Self.flaky), ("solo", Self.good), ("quiet", Self.good)] {
                        #expect(
                            try await client.request("POST", "/register", json: ["user_id": .string(user), "device_token": .string(token)]).status
                                == 200
                        )
                    }
                    #expect(try await client.request("PATCH", "/settings/quiet", json: ["enabled": false]).status == 200)

                    // Delivered: the 202 says where its status is.
                    let accepted = try await client.request("POST", "/events", json: ["user": "solo", "text": "hello"], headers: Self.backend)
                    #expect(accepted.status == 202)
                    let id = try #require(accepted.body?["id"]?.stringValue)
                    let location = try #require(accepted.headers["location"])
                    #expect(location == "/events/\(id)")
                    let delivered = try #require(try await Self.settledStatus(client, location))
                    #expect(delivered["state"] == "delivered")
                    #expect(delivered["id"]?.stringValue == id)
                    let recipient = try #require(delivered["recipients"]?[0])
                    #expect(recipient["token"]?.stringValue == TokenMask.mask(Self.good), "masked: \(recipient)")
                    #expect(recipient["transport"] == "apns" && recipient["outcome"] == "delivered" && recipient["attempts"] == 1)
                    let sent = try #require(apns.requests.first { $0.token == Self.good })
                    #expect(recipient["provider_id"]?.stringValue == sent.apnsID, "the apns-id APNs answered")
                    #expect(!delivered.compactText.contains(Self.good), "no whole token in a status")

                    // Not the backend's credential, or not its event: 404, the same answer.
                    #expect(try await client.request("GET", location).status == 401)
                    #expect(try await client.request("GET", location, headers: ["authorization": "Bearer wrong"]).status == 401)
                    let unknown = try await client.request("GET", "/events/no-such-event", headers: Self.backend)
                    #expect(unknown.status == 404 && unknown.body?["field"] == "id")

                    // Dropped by a filter, with its stage and code.
                    let quiet = try await client.request("POST", "/events", json: ["user": "quiet", "text": "shh"], headers: Self.backend)
                    let quietLocation = try #require(quiet.headers["location"])
                    let dropped = try #require(try await Self.settledStatus(client, quietLocation))
                    #expect(dropped["state"] == "dropped" && dropped["stage"] == "filters[0]" && dropped["code"] == "setting_off")

                    // One device gets it, the other fails twice: a dead letter with its input.
                    let partial = try await client.request("POST", "/events", json: ["user": "u", "text": "both?"], headers: Self.backend)
                    let partialID = try #require(partial.body?["id"]?.stringValue)
                    let partialLocation = try #require(partial.headers["location"])
                    let dead = try #require(try await Self.settledStatus(client, partialLocation))
                    #expect(dead["state"] == "dead_letter")
                    let outcomes = Dictionary(
                        uniqueKeysWithValues: (dead["recipients"]?.arrayValue ?? []).map { ($0["token"]?.stringValue ?? "", $0) }
                    )
                    #expect(outcomes[TokenMask.mask(Self.good)]?["outcome"] == "delivered")
                    #expect(outcomes[TokenMask.mask(Self.flaky)]?["outcome"] == "retry-after")
                    #expect(outcomes[TokenMask.mask(Self.flaky)]?["attempts"] == 2)

                    // The operator's view: the gauge and the status page of the daemon,
                    let admin = HTTPTestClient(port: try await daemon.adminPort())
                    #expect(try await AdminListenerTests.scrape(admin)[#"pushpipe_dead_letters{pipeline="followed"}"#] == 1)
                    #expect(try await admin.request("GET", "/").text.contains(partialID))
                    // and the CLI, another process on the same store.
                    let listed = try await Self.command(
                        ["dead-letters", "list", "--json", "--store", store],
                        directory: directory,
                        environment: apnsEnvironment
                    )
                    let letters = try JSON.parse(listed.joined(separator: "\n"))
                    #expect(letters.arrayValue?.map { $0["id"]?.stringValue } == [partialID])
                    let shown = try JSON.parse(
                        try await Self.command(
                            ["dead-letters", "show", partialID, "--store", store],
                            directory: directory,
                            environment: apnsEnvironment
                        ).joined(separator: "\n")
                    )
                    #expect(shown["input"]?["body"] == ["user": "u", "text": "both?"])
                    let status = try JSON.parse(
                        try await Self.command(
                            ["events", "show", partialID, "--store", store],
                            directory: directory,
                            environment: apnsEnvironment
                        ).joined(separator: "\n")
                    )
                    #expect(status["state"] == "dead_letter")

                    // Fixed: the replay goes to the flaky device only, and the event is delivered.
                    fixed.update { $0 = true }
                    let goodBefore = apns.requests.filter { $0.token == Self.good }.count
                    let flakyBefore = apns.requests.filter { $0.token == Self.flaky }.count
                    let replayed = try await Self.command(
                        ["dead-letters", "replay", partialID, "--store", store],
                        directory: directory,
                        environment: apnsEnvironment
                    )
                    #expect(replayed.contains { $0.contains("queued \(partialID)") && $0.contains("1 recipients") }, "\(replayed)")
                    let after = try #require(try await Self.settledStatus(client, partialLocation))
                    #expect(after["state"] == "delivered", "\(after)")
                    #expect(after["recipients"]?.arrayValue?.count == 2)
                    #expect(after["recipients"]?.arrayValue?.allSatisfy { $0["outcome"] == "delivered" } == true)
                    #expect(apns.requests.filter { $0.token == Self.flaky }.count == flakyBefore + 1)
                    #expect(apns.requests.filter { $0.token == Self.good }.count == goodBefore, "the device that got it does not get it again")
                    #expect(try await AdminListenerTests.scrape(admin)[#"pushpipe_dead_letters{pipeline="followed"}"#] == 0)
                    let empty = try await Self.command(
                        ["dead-letters", "list", "--json", "--store", store],
                        directory: directory,
                        environment: apnsEnvironment
                    )
                    #expect(try JSON.parse(empty.joined(separator: "\n")) == [])
                    // A second replay finds no dead letter.
                    let again = try await Self.command(
                        ["dead-letters", "replay", partialID, "--store", store],
                        directory: directory,
                        environment: apnsEnvironment,
                        status: 1
                    )
                    #expect(again.isEmpty)
                }
            },
            cleanup: apns.stop
        )
    }

    /// Runs `pushpipe` with `arguments` to its end; returns what it printed.
    static func command(
        _ arguments: [String],
        directory: TemporaryDirectory,
        environment: [String: String],
        status expected: Int32 = 0
    ) async throws
        -> [String]
    {
        try await DaemonProcess.run(arguments: arguments, directory: directory.path, environment: environment) { process in
            let status = try await process.waitForExit()
            #expect(status == expected, "\(arguments): \(process.standardError.suffix(5))")
            return process.standardOutput
        }
    }
}
