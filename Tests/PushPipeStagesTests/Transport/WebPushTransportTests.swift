import Foundation
import Logging
import PushPipeCore
import PushPipeSQLite
import PushPipeTesting
import Testing

@testable import PushPipeStages

/// The `webpush` renderer and transport against the stand-in push service, which decrypts
/// every message with the browser's key and checks the VAPID signature on its own.
@Suite struct WebPushTransportTests {
    struct Harness {
        let directory: TemporaryDirectory
        let standIn: WebPushStandIn
        let store: SQLiteStore
        let definition: PipelineDefinition

        func register(_ user: String, _ subscription: JSON) async throws {
            try await store.pipeline(definition.name).register(
                DeviceToken(user: user, kind: "webpush", value: subscription.compactText),
                environment: nil,
                replace: false
            )
        }

        func process(_ body: JSON, user: String = "ann") async throws -> EventReport {
            try await process([(body, user)])[0]
        }

        /// Events one after the other while the pipeline runs once (its connections are kept).
        func process(_ events: [(body: JSON, user: String)]) async throws -> [EventReport] {
            let processor = EventProcessor(definition: definition, store: store, logger: Logger(label: "webpush-test"), mode: .live)
            return try await definition.withRunningStages(store: store, logger: Logger(label: "webpush-test"), mode: .live) {
                var reports: [EventReport] = []
                for event in events { reports.append(await processor.process(Event(pipeline: definition.name, user: event.user, body: event.body))) }
                return reports
            }
        }
    }

    func withHarness(
        renderer extra: String = "",
        transport more: String = "",
        http2: Bool = false,
        allowing: [String]? = nil,
        alsoAllowing: [String] = [],
        delivery: String = "{attempts: 2, backoff: 10ms, max_backoff: 50ms}",
        authority given: TestCertificateAuthority? = nil,
        _ body: (Harness) async throws -> Void
    ) async throws {
        let directory = try TemporaryDirectory("webpush")
        let authority = try given ?? TestCertificateAuthority()
        try authority.writeCACertificate(to: directory.file("ca.pem"))
        let standIn = try await WebPushStandIn.start(authority: authority, http2: http2)
        _ = try VAPIDKeyFile.generate(path: directory.file("vapid.pem"))
        let file = try directory.write(
            "webpush-test.yaml",
            """
            pipeline: webpush-test
            sources:
              - {type: http.event, path: /events}
            renderer:
              type: webpush
              title: "{{title}}"
              body: "{{text}}"
              url: "https://example.com/games/{{n}}"
            \(extra)
            transport:
              type: webpush
              vapid_key_path: \(directory.file("vapid.pem"))
              subject: mailto:ops@example.com
              ca_file: \(directory.file("ca.pem"))
            \(more)
            delivery: \(delivery)
            """
        )
        let loaded = await ConfigLoader(
            builtins: BuiltinStages.all,
            interpolation: EnvironmentInterpolation(environment: [:]),
            egress: EgressPolicy(privateOrigins: (allowing ?? [standIn.origin]) + alsoAllowing)
        )
        .load(pipelineFiles: [file], pluginsDirectory: nil)
        guard let definition = loaded.pipelines.first else { throw ConfigurationError(loaded.diagnostics) }
        let store = try SQLiteStore(path: directory.file("state.sqlite"))
        try await withCleanup(
            {
                try await body(Harness(directory: directory, standIn: standIn, store: store, definition: definition))
            },
            cleanup: {
                try? await store.close()
                await standIn.stop()
                directory.remove()
            }
        )
    }

    @Test func theBrowserReadsWhatWasRenderedAndTheServiceKnowsWhoSentIt() async throws {
        try await withHarness { harness in
            try await harness.register("ann", harness.standIn.subscribe("b1"))
            let report = try await harness.process(["title": "Your turn", "text": "in Game 1", "n": 7])
            #expect(report.status == .delivered)
            #expect(report.deliveries.first?.providerID?.hasPrefix(harness.standIn.origin + "/message/") == true)
            let message = try #require(harness.standIn.messages.first)
            #expect(message.rejection == nil)
            #expect(message.json == ["title": "Your turn", "body": "in Game 1", "data": ["url": "https://example.com/games/7"]])
            #expect(message.vapidSubject == "mailto:ops@example.com")
            #expect(message.headers["ttl"] == "86400")
            #expect(message.headers["urgency"] == "normal")
            #expect(message.headers["topic"] == nil)
        }
    }

    /// Push services offer HTTP/2: every message to one service, however many subscriptions,
    /// goes over one connection, opened once and kept.
    @Test func oneConnectionPerPushServiceOverHTTP2WhereOffered() async throws {
        try await withHarness(http2: true) { harness in
            try await harness.register("ann", harness.standIn.subscribe("first"))
            for index in 0..<20 { try await harness.register("bob", harness.standIn.subscribe("b\(index)")) }
            let reports = try await harness.process([(["title": "t", "text": "x", "n": 0], "ann"), (["title": "t", "text": "x", "n": 1], "bob")])
            #expect(reports[0].status == .delivered)
            let report = reports[1]
            #expect(report.deliveries.count == 20 && report.deliveries.allSatisfy { $0.outcome == .delivered })
            #expect(harness.standIn.messages.count == 21 && harness.standIn.messages.allSatisfy { $0.rejection == nil })
            #expect(Set(harness.standIn.messages.map(\.httpVersion)) == ["HTTP/2.0"])
            #expect(harness.standIn.connections == 1)
        }
    }

    /// An event's notifications to one service go to its connection as one batch: each answer
    /// is its own subscription's (a subscription the service forgot is pruned, the rest
    /// delivered), and a second service in the same batch, HTTP/1.1 only, still gets its own.
    /// 40 messages: more than are encrypted one after the other, so in parallel chunks too.
    @Test func aBatchCarriesEachAnswerToItsOwnSubscription() async throws {
        let authority = try TestCertificateAuthority()
        let http1 = try await WebPushStandIn.start(authority: authority, http2: false)
        // One attempt: a retry goes alone, and would hide a batch that failed.
        try await withHarness(http2: true, alsoAllowing: [http1.origin], delivery: "{attempts: 1}", authority: authority) { harness in
            // The report masks a token to its service and the first 8 characters of its id.
            func id(_ service: String, _ index: Int) -> String { "\(service)-\(String(format: "%03d", index))-" }
            for index in 0..<40 { try await harness.register("bob", harness.standIn.subscribe(id("h2", index) + "of-bob")) }
            for index in 0..<2 { try await harness.register("bob", http1.subscribe(id("h1", index) + "of-bob")) }
            let forgotten = Set([1, 4, 7, 33, 39].map { id("h2", $0) })
            for id in forgotten { harness.standIn.unsubscribe(id + "of-bob") }
            let report = try await harness.process(["title": "t", "text": "x", "n": 1], user: "bob")
            #expect(report.deliveries.count == 42)
            for delivery in report.deliveries {
                let id = String(try #require(delivery.token.split(separator: "/").last, "\(delivery.token)").prefix(7))
                #expect(delivery.outcome == (forgotten.contains(id) ? .dropToken : .delivered), "\(delivery.token): \(delivery.outcome)")
            }
            let delivered = Set((0..<40).map { id("h2", $0) }).subtracting(forgotten)
            #expect(Set(harness.standIn.messages.map { String($0.subscription.prefix(7)) }) == delivered)
            #expect(harness.standIn.messages.count == 35)
            #expect(harness.standIn.messages.allSatisfy { $0.rejection == nil && $0.httpVersion == "HTTP/2.0" })
            #expect(harness.standIn.connections == 1)
            #expect(Set(http1.messages.map { String($0.subscription.prefix(7)) }) == [id("h1", 0), id("h1", 1)])
            #expect(http1.messages.allSatisfy { $0.rejection == nil && $0.httpVersion == "HTTP/1.1" })
            let left = try await harness.store.pipeline(harness.definition.name).tokens(user: "bob", kind: "webpush")
            #expect(left.count == 37, "the five forgotten subscriptions are pruned")
        }
        await http1.stop()
    }

    /// A service that completes TLS and then says nothing (anyone can run one) holds its own
    /// messages of a batch for the request timeout, and no one else's: the services of a batch
    /// are sent to at once. (10 s: a loaded machine connects to the stand-in well within it.)
    @Test(.timeLimit(.minutes(1))) func aSilentServiceInABatchHoldsOnlyItsOwnMessages() async throws {
        let authority = try TestCertificateAuthority()
        let silent = try await SilentTLSServer.start(authority: authority, greeting: [])
        try await withHarness(
            transport: "  timeout: 10s",
            http2: true,
            alsoAllowing: [silent.baseURL],
            delivery: "{attempts: 1}",
            authority: authority
        ) { harness in
            for index in 0..<3 { try await harness.register("bob", harness.standIn.subscribe("kept-\(index)-of-bob")) }
            for index in 0..<2 { try await harness.register("bob", try Self.moved(harness.standIn.subscribe("silent-\(index)"), to: silent.baseURL)) }
            let report = try await harness.process(["title": "t", "text": "x", "n": 1], user: "bob")
            #expect(report.deliveries.count == 5)
            let outcomes = Dictionary(grouping: report.deliveries, by: { $0.token.contains("/kept-") })
            #expect(outcomes[true]?.map(\.outcome) == [.delivered, .delivered, .delivered], "\(report.deliveries)")
            #expect(outcomes[false]?.map(\.outcome) == [.retryAfter, .retryAfter], "\(report.deliveries)")
            #expect(harness.standIn.messages.count == 3)
        }
        await silent.stop()
    }

    /// A service that speaks only HTTP/1.1 gets it, on kept-alive connections: the first
    /// connection offered h2 by ALPN, the service did not choose it, and the transport
    /// remembers that (across runs of the pipeline too) instead of asking again.
    @Test func http1OnlyServicesKeepTheirConnections() async throws {
        try await withHarness { harness in
            try await harness.register("ann", harness.standIn.subscribe("b1"))
            for n in 0..<3 { #expect(try await harness.process(["title": "t", "text": "x", "n": .int(Int64(n))]).status == .delivered) }
            #expect(Set(harness.standIn.messages.map(\.httpVersion)) == ["HTTP/1.1"])
            #expect(harness.standIn.connections == 2, "the one that offered h2, then the HTTP/1.1 one kept")
        }
    }

    @Test func ttlUrgencyAndTopicComeFromTheRenderer() async throws {
        try await withHarness(renderer: "  ttl: 60\n  urgency: high\n  topic: \"game{{n}}\"") { harness in
            try await harness.register("ann", harness.standIn.subscribe("b1"))
            _ = try await harness.process(["title": "t", "text": "x", "n": 7])
            let message = try #require(harness.standIn.messages.first)
            #expect(message.headers["ttl"] == "60")
            #expect(message.headers["urgency"] == "high")
            #expect(message.headers["topic"] == "game7")
        }
    }

    /// A TTL written as a duration is its seconds, in the file as from a template.
    @Test(arguments: [("1h", "3600"), ("\"{{ttl}}\"", "90")])
    func aTTLWrittenAsADurationIsItsSeconds(_ written: String, _ header: String) async throws {
        try await withHarness(renderer: "  ttl: \(written)") { harness in
            try await harness.register("ann", harness.standIn.subscribe("b1"))
            #expect(try await harness.process(["title": "t", "text": "x", "n": 1, "ttl": "90s"]).status == .delivered)
            #expect(harness.standIn.messages.first?.headers["ttl"] == header)
        }
    }

    /// A number from the event that no header can hold (1e300, "inf", NaN) fails that event
    /// with a reason: a trap in the transport would crash the daemon at every restart, the
    /// event still queued.
    @Test(arguments: [JSON.double(1e300), .string("inf"), .string("nan"), .int(-5), .double(2_592_001), .string("soon")])
    func aTTLNoHeaderCanHoldFailsTheEventNotTheDaemon(_ ttl: JSON) async throws {
        try await withHarness(renderer: "  ttl: \"{{ttl}}\"") { harness in
            try await harness.register("ann", harness.standIn.subscribe("b1"))
            let report = try await harness.process(["title": "t", "text": "x", "n": 1, "ttl": ttl])
            #expect(report.status != .delivered)
            #expect(report.deliveries.first?.reason?.contains("ttl") == true, "\(report.deliveries)")
            #expect(harness.standIn.messages.isEmpty)
            #expect(try await harness.process(["title": "t", "text": "x", "n": 2, "ttl": 60]).status == .delivered, "the next event goes")
        }
    }

    /// A push service that redirects into the operator's network gets no second
    /// request; its subscription goes, and the internal server sees nothing.
    @Test(arguments: [false, true]) func aRedirectIsNotFollowedAndItsSubscriptionGoes(http2: Bool) async throws {
        let intranet = try await OGSStandIn.start()
        try await withHarness(http2: http2) { harness in
            try await harness.register("ann", harness.standIn.subscribe("b1"))
            harness.standIn.script(.init(status: 307, headers: [("location", "\(intranet.baseURL)/api/v1/players/42/full")]))
            let report = try await harness.process(["title": "t", "text": "x", "n": 1])
            #expect(report.deliveries.first?.outcome == .dropToken, "\(report.deliveries)")
            #expect(report.deliveries.first?.reason?.contains("redirect") == true)
            #expect(intranet.requests.isEmpty, "the internal server saw \(intranet.requests.count) requests")
            #expect(try await harness.store.pipeline(harness.definition.name).tokens(user: "ann", kind: "webpush").isEmpty)
        }
        await intranet.stop()
    }

    /// What a push service writes in its body is never repeated (in the status route, dead
    /// letters, the tap or logs): only a code of the form codes have.
    @Test(arguments: [false, true]) func aServicesBodyIsNotRepeatedOnlyItsCode(http2: Bool) async throws {
        try await withHarness(http2: http2) { harness in
            try await harness.register("ann", harness.standIn.subscribe("b1"))
            let page = "root:x:0:0:root:/root:/bin/bash\u{0}secret-internal-page " + String(repeating: "A", count: 5000)
            harness.standIn.script(
                .init(status: 400, body: ["error": .string(page), "message": .string(page)]),
                .init(status: 400, body: ["errno": 109, "message": "root:x:0:0:root secret-internal-page"])
            )
            for expected in ["400", "400 (109)"] {
                let report = try await harness.process(["title": "t", "text": "x", "n": 1])
                let reason = try #require(report.deliveries.first?.reason)
                #expect(reason == expected, "\(reason.prefix(80))")
            }
        }
    }

    /// Without `--allow-private-endpoint` the stand-in on loopback is refused, at
    /// registration and, for a subscription stored earlier, before anything is sent.
    @Test(arguments: [false, true]) func aServiceOnLoopbackIsRefusedUnlessItsOriginIsAllowed(http2: Bool) async throws {
        try await withHarness(http2: http2, allowing: []) { harness in
            let subscription = harness.standIn.subscribe("b1")
            let transport = try #require(harness.definition.transport.stage as? WebPushTransport)
            #expect(throws: TokenRejected.self) {
                try transport.validate(DeviceToken(user: "ann", kind: "webpush", value: subscription.compactText))
            }
            try await harness.register("ann", subscription)
            let report = try await harness.process(["title": "t", "text": "x", "n": 1])
            #expect(report.deliveries.first?.outcome == .dropToken)
            #expect(report.deliveries.first?.reason?.contains("private-address") == true, "\(report.deliveries)")
            #expect(harness.standIn.messages.isEmpty)
        }
    }

    /// A push service anyone can run answering `429 Retry-After: 3600` holds neither
    /// its own event for an hour (the pipeline's room) nor the next one: past `max_backoff`
    /// the notification ends unresolved at once, and while its origin is paused nothing more
    /// is sent there.
    @Test func aPushServiceAskingForAnHourHoldsNoRoom() async throws {
        try await withHarness { harness in
            try await harness.register("mallory", harness.standIn.subscribe("m1"))
            try await harness.register("ann", harness.standIn.subscribe("a1"))
            harness.standIn.script(.init(status: 429, retryAfter: 3600))
            // One processor, as a daemon's pipeline has: the pause is its transport gate's.
            let logger = Logger(label: "webpush-test")
            let processor = EventProcessor(definition: harness.definition, store: harness.store, logger: logger, mode: .live)
            // Had an event waited out the hour, this would not finish within two minutes, which
            // is room enough for a busy machine.
            let finishedInTime = await finished(within: .seconds(120)) { () -> Result<[EventReport], any Error> in
                do {
                    return .success(
                        try await harness.definition.withRunningStages(store: harness.store, logger: logger, mode: .live) {
                            var reports: [EventReport] = []
                            for n in 0..<3 {
                                reports.append(
                                    await processor.process(
                                        Event(
                                            pipeline: harness.definition.name,
                                            user: "mallory",
                                            body: ["title": "t", "text": "x", "n": .int(Int64(n))]
                                        )
                                    )
                                )
                            }
                            // Another subscriber of the same push service (FCM's, Apple's are shared by all
                            // their browsers) is not held by mallory's answer.
                            let ann = await processor.process(
                                Event(pipeline: harness.definition.name, user: "ann", body: ["title": "t", "text": "x", "n": 9])
                            )
                            #expect(ann.status == .delivered, "\(ann.deliveries)")
                            return reports
                        }
                    )
                } catch {
                    return .failure(error)
                }
            }
            let reports = try #require(finishedInTime, "an event waited out the hour").get()
            #expect(reports.allSatisfy { !($0.reason ?? "").contains("/push/m1") }, "no whole endpoint in a reason")
            for report in reports {
                #expect(report.status != .delivered)
                #expect(report.deliveries.first?.outcome == .retryAfter, "\(report.deliveries)")
            }
            #expect(harness.standIn.messages.filter { $0.subscription == "m1" }.count == 1, "the paused subscription got nothing more")
        }
    }

    /// A subscription limited to named push services (`allowed_origins`).
    @Test func anAllowListKeepsOtherServicesOut() async throws {
        try await withHarness(transport: "  allowed_origins: [\"https://*.push.apple.com\"]") { harness in
            let transport = try #require(harness.definition.transport.stage as? WebPushTransport)
            let error = #expect(throws: TokenRejected.self) {
                try transport.validate(DeviceToken(user: "ann", kind: "webpush", value: harness.standIn.subscribe("b1").compactText))
            }
            #expect(error?.field == "endpoint" && error?.message.contains("origin-not-allowed") == true)
        }
    }

    @Test(arguments: [false, true]) func aGoneSubscriptionIsPruned(http2: Bool) async throws {
        try await withHarness(http2: http2) { harness in
            try await harness.register("ann", harness.standIn.subscribe("b1"))
            try await harness.register("ann", harness.standIn.subscribe("b2"))
            harness.standIn.unsubscribe("b2")
            let report = try await harness.process(["title": "t", "text": "x", "n": 1])
            #expect(report.deliveries.map(\.outcome.rawValue).sorted() == ["delivered", "drop-token"])
            let left = try await harness.store.pipeline("webpush-test").tokens(user: "ann", kind: "webpush")
            #expect(left.count == 1)
            #expect(left.first?.value.contains("/push/b1") == true)
        }
    }

    @Test(arguments: [false, true]) func tooLargeIsAConfigurationErrorAndNotRetried(http2: Bool) async throws {
        try await withHarness(http2: http2) { harness in
            try await harness.register("ann", harness.standIn.subscribe("b1"))
            harness.standIn.script(.init(status: 413))
            let report = try await harness.process(["title": "t", "text": "x", "n": 1])
            #expect(report.deliveries.first?.outcome == .configError)
            #expect(report.deliveries.first?.attempts == 1)
        }
    }

    /// Within `max_backoff` a push service's `Retry-After` is waited out (beyond it, see
    /// `aPushServiceAskingForAnHourHoldsNoRoom`).
    @Test(arguments: [false, true]) func throttlingIsRetriedAfterItsRetryAfter(http2: Bool) async throws {
        try await withHarness(http2: http2, delivery: "{attempts: 2, backoff: 10ms, max_backoff: 5s}") { harness in
            try await harness.register("ann", harness.standIn.subscribe("b1"))
            harness.standIn.script(.init(status: 429, retryAfter: 1))
            let started = ContinuousClock.now
            let report = try await harness.process(["title": "t", "text": "x", "n": 1])
            #expect(report.deliveries.first?.outcome == .delivered)
            #expect(report.deliveries.first?.attempts == 2)
            #expect(ContinuousClock.now - started >= .seconds(1), "the second attempt waited for Retry-After")
            #expect(harness.standIn.messages.count == 2)
        }
    }

    @Test func aPayloadTooLargeToEncryptIsRefusedBeforeSending() async throws {
        try await withHarness { harness in
            try await harness.register("ann", harness.standIn.subscribe("b1"))
            let report = try await harness.process(["title": "t", "text": .string(String(repeating: "x", count: 4000)), "n": 1])
            #expect(report.status != .delivered)
            #expect(harness.standIn.messages.isEmpty)
        }
    }

    /// The register route checks a subscription's form; the transport, asked by the route,
    /// refuses a key of the right form that is not a point on P-256, before anything is stored.
    @Test func aKeyThatIsNotAPointIsRefusedAtRegistration() async throws {
        try await withHarness { harness in
            let route = try #require(StageRegistry(BuiltinStages.all).routeAction(named: "register")).route([
                "action": "register", "path": "/web/subscriptions", "user_field": "user_id",
                "token_field": "subscription", "token_format": "webpush", "token_kind": "webpush",
            ])
            var context = RouteContext(pipeline: harness.definition.name, store: harness.store, sink: RefusingEventSink())
            context.tokenValidators = [try #require(harness.definition.transport.stage as? any TokenValidator)]
            func register(_ subscription: JSON) async throws -> RouteResponse {
                try await route.handler(
                    RouteRequest(
                        method: "POST",
                        path: "/web/subscriptions",
                        body: ["user_id": "ann", "subscription": subscription]
                    ),
                    context
                )
            }
            let real = harness.standIn.subscribe("b1")
            let notAPoint: JSON = [
                "endpoint": real["endpoint"] ?? nil,
                "keys": [
                    "p256dh": .string(Data([0x04] + Array(repeating: 1, count: 64)).base64URLEncodedString()),
                    "auth": real["keys"]?["auth"] ?? nil,
                ],
            ]
            await #expect { _ = try await register(notAPoint) } throws: { ($0 as? RouteError)?.field == "subscription.keys.p256dh" }
            var stored = try await harness.store.pipeline(harness.definition.name).tokens(user: "ann", kind: "webpush")
            #expect(stored.isEmpty)
            #expect(try await register(harness.standIn.subscribe("b2")).status == 200)
            stored = try await harness.store.pipeline(harness.definition.name).tokens(user: "ann", kind: "webpush")
            #expect(stored.count == 1)
        }
    }

    /// The subscription `standIn` made, its endpoint moved to `origin` (same path, same keys).
    static func moved(_ subscription: JSON, to origin: String) throws -> JSON {
        let endpoint = try #require(subscription["endpoint"]?.stringValue)
        let path = endpoint[try #require(endpoint.range(of: "/push/")).lowerBound...]
        return ["endpoint": .string(origin + path), "keys": subscription["keys"] ?? nil]
    }

    /// A name that resolves to loopback (`127.1`) is refused before any connection is made,
    /// over HTTP/2 as over HTTP/1.1: the connection goes to the address that was checked.
    @Test func aNameThatResolvesToAPrivateAddressGetsNoConnection() async throws {
        try await withHarness(http2: true, allowing: []) { harness in
            try await harness.register("ann", try Self.moved(harness.standIn.subscribe("b1"), to: "https://127.1:\(harness.standIn.port)"))
            let report = try await harness.process(["title": "t", "text": "x", "n": 1])
            #expect(report.deliveries.first?.outcome == .dropToken, "\(report.deliveries)")
            #expect(report.deliveries.first?.reason?.contains("private-address") == true, "\(report.deliveries)")
            #expect(harness.standIn.connections == 0)
        }
    }

    /// A service that completes TLS with h2 and then never sends its SETTINGS, or sends
    /// SETTINGS that allow no stream and then nothing, fails the send within its timeout (2 s
    /// here), to be retried, instead of holding it and the pipeline's room: a request waiting
    /// for a stream has its deadline too.
    @Test(.timeLimit(.minutes(1)), arguments: [[], SilentTLSServer.noStreamsAllowed])
    func aServiceThatAllowsNoStreamFailsTheSendWithinItsTimeout(greeting: [UInt8]) async throws {
        let authority = try TestCertificateAuthority()
        let silent = try await SilentTLSServer.start(authority: authority, greeting: greeting)
        try await withHarness(transport: "  timeout: 2s", allowing: [silent.baseURL], delivery: "{attempts: 1}", authority: authority) { harness in
            try await harness.register("ann", try Self.moved(harness.standIn.subscribe("b1"), to: silent.baseURL))
            let started = ContinuousClock.now
            let report = try await harness.process(["title": "t", "text": "x", "n": 1])
            // The timeout, and room for a loaded machine (the pipeline starts in this time too);
            // the failure this guards against is a send that never returns.
            #expect(ContinuousClock.now - started < .seconds(40))
            #expect(report.deliveries.first?.outcome == .retryAfter, "\(report.deliveries)")
            let reason = try #require(report.deliveries.first?.reason)
            // Waiting for the stream, or (on a machine too busy to connect in 2 s) for the connection.
            #expect(reason.contains("within the request timeout"), "\(reason)")
        }
        await silent.stop()
    }

    /// An answer's body is read to 1,024 bytes and no further: the stream is reset there, and
    /// the connection, its window given back, carries the next messages (a service that
    /// answers megabytes neither fills memory nor stalls its connection).
    @Test func aLongAnswerIsReadToItsLimitAndTheConnectionCarriesOn() async throws {
        try await withHarness(http2: true, delivery: "{attempts: 1}") { harness in
            try await harness.register("ann", harness.standIn.subscribe("b1"))
            let long = Data(#"{"reason":"Long"}"#.utf8) + Data(repeating: 0x20, count: 2_000_000)
            harness.standIn.script(.init(status: 400, rawBody: long), .init(status: 400, rawBody: long), .init(status: 400, rawBody: long))
            let reports = try await harness.process(Array(repeating: (["title": "t", "text": "x", "n": 1], "ann"), count: 4))
            #expect(reports.prefix(3).allSatisfy { $0.deliveries.first?.reason == "400 (Long)" }, "\(reports.map(\.deliveries))")
            #expect(reports[3].status == .delivered)
            #expect(harness.standIn.connections == 1)
        }
    }

    /// The urgency comes from the event through a template: anything but RFC 8030's four words
    /// fails that event before it is sent (a header NIOHTTP2 is not asked to check).
    @Test func anUrgencyOutsideRFC8030FailsTheEventBeforeSending() async throws {
        try await withHarness(renderer: "  urgency: \"{{u}}\"", http2: true) { harness in
            try await harness.register("ann", harness.standIn.subscribe("b1"))
            let report = try await harness.process(["title": "t", "text": "x", "n": 1, "u": "high\r\nx-injected: 1"])
            #expect(report.status != .delivered)
            #expect(report.deliveries.first?.reason?.contains("urgency") == true, "\(report.deliveries)")
            #expect(harness.standIn.messages.isEmpty)
            #expect(try await harness.process(["title": "t", "text": "x", "n": 2, "u": "high"]).status == .delivered)
            #expect(harness.standIn.messages.first?.headers["urgency"] == "high")
        }
    }
}
