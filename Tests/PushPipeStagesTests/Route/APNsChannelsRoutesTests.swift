import Foundation
import Logging
import PushPipeCore
import PushPipeSQLite
import PushPipeTesting
import Testing

@testable import PushPipeStages

/// The `apns.channels` routes against the APNs stand-in: a backend creates a group's channel,
/// a page to the group updates every activity on it with one broadcast, and deleting the group
/// deletes the channel on APNs and in the store.
@Suite struct APNsChannelsRoutesTests {

    @Test func aGroupsChannelIsCreatedBroadcastToAndDeleted() async throws {
        let directory = try TemporaryDirectory("channels-routes")
        let (standIn, _) = try await APNsStandIn.startWithThrowawayCredentials(in: directory, teamID: "TEAM123456", keyID: "KEY1234567")
        let credentials = """
              team_id: TEAM123456
              key_id: KEY1234567
              key_path: \(directory.file("AuthKey.p8"))
              bundle_id: com.example.pager
              base_url: \(standIn.baseURL)
              ca_file: \(directory.file("ca.pem"))
            """
        let file = try directory.write(
            "pager-broadcast.yaml",
            """
            pipeline: pager-broadcast
            routes:
              - action: apns.channels
                path: /api/channels
                store_latest: true
            \(credentials.split(separator: "\n").map { "  " + $0 }.joined(separator: "\n"))
            sources:
              - {type: http.event, path: /api/pages, user_field: group}
            renderer:
              type: apns.live-activity
              event: update
              update_token_kind: broadcast-channel
              fallback_token_kind: ""
              attributes_type: PagerActivityAttributes
              content_state: {sender: "{{sender}}", message: "{{message}}", timestamp: {$from: event.time}, isDemo: false, messageIndex: 0, totalMessages: 1}
            transport:
              type: apns
            \(credentials)
            """
        )
        let loaded = await ConfigLoader(builtins: BuiltinStages.all, interpolation: EnvironmentInterpolation(environment: [:]))
            .load(pipelineFiles: [file], pluginsDirectory: nil)
        let definition = try #require(loaded.pipelines.first, "\(loaded.diagnostics)")
        let store = try SQLiteStore(path: directory.file("state.sqlite"))
        try await withCleanup(
            {
                try await definition.withRunningStages(store: store, logger: Logger(label: "channels"), mode: .live) {
                    let routes = definition.routes.filter { $0.keyPath == "routes[0]" }.map(\.route)
                    #expect(routes.map(\.method) == ["POST", "GET", "DELETE"])
                    #expect(routes.allSatisfy { $0.limits.maxBodyBytes == 65536 && $0.limits.perClient == nil }, "a backend's limits, not an app's")
                    #expect(definition.longRunningStages.contains { $0.id == "routes[0]" }, "the channel manager stops with the pipeline")
                    let context = RouteContext(pipeline: definition.name, store: store, sink: RefusingEventSink())
                    let created = try await routes[0].handler(
                        RouteRequest(method: "POST", path: "/api/channels", body: ["group": "on-call"]),
                        context
                    )
                    #expect(created.status == 201)
                    let channel = try #require(created.body["channel_id"]?.stringValue)
                    #expect(standIn.channels == [channel])
                    #expect(standIn.requests.first?.body?["message-storage-policy"] == 1)
                    let stored = try await store.pipeline(definition.name).tokens(user: "on-call", kind: "broadcast-channel")
                    #expect(stored.map(\.value) == [channel])

                    let processor = EventProcessor(definition: definition, store: store, logger: Logger(label: "channels"), mode: .live)
                    let report = await processor.process(
                        Event(pipeline: definition.name, user: "on-call", body: ["sender": "ALICE", "message": "DB down"])
                    )
                    #expect(report.status == .delivered)
                    #expect(standIn.requests.last?.headers["apns-channel-id"] == channel)

                    let deleted = try await routes.first { $0.method == "DELETE" }!.handler(
                        RouteRequest(method: "DELETE", path: "/api/channels/on-call", parameters: ["group": "on-call"]),
                        context
                    )
                    #expect(deleted.body["channels"] == 1)
                    #expect(standIn.channels.isEmpty)
                    let left = try await store.pipeline(definition.name).tokens(user: "on-call", kind: "broadcast-channel")
                    #expect(left.isEmpty)

                    await #expect {
                        _ = try await routes[0].handler(RouteRequest(method: "POST", path: "/api/channels", body: [:]), context)
                    } throws: { ($0 as? RouteError)?.field == "group" }

                    // A dry run reaches no provider: no channel is made on APNs, and the answer says why (not a 5xx).
                    var dryRun = context
                    dryRun.mode = .dryRun
                    let sent = standIn.requests.count
                    await #expect {
                        _ = try await routes[0].handler(RouteRequest(method: "POST", path: "/api/channels", body: ["group": "dry"]), dryRun)
                    } throws: { ($0 as? RouteError)?.status == 409 }
                    #expect(standIn.requests.count == sent && standIn.channels.isEmpty)

                    // Two requests for a new group at once make one channel; the second gets it too.
                    let post = RouteRequest(method: "POST", path: "/api/channels", body: ["group": "pair"])
                    async let first = routes[0].handler(post, context)
                    async let second = routes[0].handler(post, context)
                    let answers = try await [first, second]
                    #expect(answers.map(\.status).sorted() == [200, 201])
                    #expect(Set(answers.compactMap { $0.body["channel_id"]?.stringValue }) == standIn.channels)
                    #expect(standIn.channels.count == 1)
                }
            },
            cleanup: {
                try? await store.close()
                await standIn.stop()
                directory.remove()
            }
        )
    }

    /// APNs out of reach (a refused connection): the backend is told 502, not a 500 that hides
    /// whose side failed, and nothing is stored.
    @Test func aChannelAPNsCannotBeAskedForIsABadGateway() async throws {
        let directory = try TemporaryDirectory("channels-unreachable")
        defer { directory.remove() }
        let (standIn, _) = try await APNsStandIn.startWithThrowawayCredentials(in: directory, teamID: "TEAM123456", keyID: "KEY1234567")
        await standIn.stop()
        let definition = try await loadPipeline(
            """
            pipeline: channels
            routes:
              - action: apns.channels
                path: /api/channels
                team_id: TEAM123456
                key_id: KEY1234567
                key_path: \(directory.file("AuthKey.p8"))
                bundle_id: com.example.pager
                base_url: \(standIn.baseURL)
                ca_file: \(directory.file("ca.pem"))
            sources: [{type: http.event, path: /api/pages}]
            renderer: {type: json.template, payload: {}}
            transport: {type: stdout}
            """,
            in: directory
        )
        let store = try SQLiteStore(path: directory.file("state.sqlite"))
        try await withCleanup(
            {
                try await definition.withRunningStages(store: store, logger: Logger(label: "channels"), mode: .live) {
                    let create = try #require(definition.routes.first { $0.route.method == "POST" }?.route)
                    let context = RouteContext(pipeline: definition.name, store: store, sink: RefusingEventSink())
                    await #expect {
                        _ = try await create.handler(RouteRequest(method: "POST", path: "/api/channels", body: ["group": "gone"]), context)
                    } throws: { ($0 as? RouteError)?.status == 502 }
                    #expect(try await store.pipeline(definition.name).tokens(user: "gone", kind: "broadcast-channel").isEmpty)
                }
            },
            cleanup: { try? await store.close() }
        )
    }

    /// What an operator may get wrong, each refused where it is written: a user's credential
    /// on routes a backend calls, one method for routes that have three, and the kind under
    /// `sources:`, where no source waits forever to serve routes.
    @Test(arguments: [
        (
            "routes:\n  - {action: apns.channels, path: /c, auth: {type: jwt, secret: \(String(repeating: "s", count: 32))}, \(credentials)}\n",
            "routes[0].auth.type"
        ),
        ("routes:\n  - {action: apns.channels, path: /c, method: GET, \(credentials)}\n", "routes[0].method"),
        ("routes:\n  - {action: apns.channels, path: /c/, \(credentials)}\n", "routes[0].path"),
        ("", "sources[1].type"),
    ])
    func aMisconfiguredEntryIsRefusedWhereItIsWritten(_ routes: String, _ keyPath: String) async throws {
        let directory = try TemporaryDirectory("channels-refused")
        defer { directory.remove() }
        let misplaced = routes.isEmpty ? "\n  - {type: apns.channels, path: /c, \(Self.credentials)}" : ""
        let file = try directory.write(
            "refused.yaml",
            """
            pipeline: refused
            \(routes)sources:
              - {type: http.event, path: /events}\(misplaced)
            renderer: {type: json.template, payload: {}}
            transport: {type: stdout}
            """
        )
        let loaded = await ConfigLoader(builtins: BuiltinStages.all, interpolation: EnvironmentInterpolation(environment: [:]))
            .load(pipelineFiles: [file], pluginsDirectory: nil)
        #expect(loaded.pipelines.isEmpty)
        let diagnostic = try #require(loaded.diagnostics.first { $0.keyPath == keyPath }, "\(loaded.diagnostics)")
        if routes.isEmpty { #expect(diagnostic.message.contains("declare it under `routes:` with `action: apns.channels`")) }
    }

    static let credentials = "team_id: TEAM123456, key_id: KEY1234567, key_path: AuthKey.p8, bundle_id: com.example.pager"
}
