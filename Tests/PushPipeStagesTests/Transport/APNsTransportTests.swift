import Crypto
import Foundation
import GRDB
import PushPipeCore
import PushPipeTesting
import Testing

@testable import PushPipeStages

/// Every APNs status and reason (Apple's "Handling notification responses from APNs") against
/// the stand-in.
@Suite struct APNsTransportTests {
    func withHarness(
        _ body: (APNsHarness) async throws -> Void,
        timeout: String = "10s",
        attempts: Int = 3,
        signingKey: P256.Signing.PrivateKey? = nil,
        maxStreams: Int = 100,
        serverStreamLimit: Int = 100
    ) async throws {
        let harness = try await APNsHarness.make(
            timeout: timeout,
            signingKey: signingKey,
            attempts: attempts,
            maxStreams: maxStreams,
            serverStreamLimit: serverStreamLimit
        )
        try await harness.register("alice", APNsHarness.token)
        try await withCleanup({ try await body(harness) }, cleanup: harness.close)
    }

    func recorded(_ harness: APNsHarness) async throws -> [(outcome: String, providerID: String?, attempts: Int)] {
        let queue = try DatabaseQueue(path: harness.directory.file("state.sqlite"))
        defer { try? queue.close() }
        return try await queue.read { db in
            try Row.fetchAll(db, sql: "SELECT outcome, provider_id, attempts FROM deliveries ORDER BY id").map {
                ($0["outcome"], $0["provider_id"], $0["attempts"])
            }
        }
    }

    @Test func acceptedNotificationRecordsItsAPNsID() async throws {
        try await withHarness { harness in
            let report = try await harness.run { await $0.process(harness.event()) }
            #expect(report.status == .delivered)
            let request = try #require(harness.standIn.requests.first)
            #expect(request.rejection == nil)
            #expect(request.headers["apns-topic"] == APNsHarness.bundleID)
            #expect(request.headers["apns-push-type"] == "alert")
            #expect(request.headers["apns-priority"] == "10")
            #expect(request.body == ["aps": ["alert": ["title": "Hi", "body": "there"]], "n": 1])
            // APNs makes the id and answers with it: none is sent.
            #expect(request.headers["apns-id"] == nil)
            let apnsID = request.apnsID
            #expect(apnsID == apnsID.lowercased() && UUID(uuidString: apnsID) != nil)
            #expect(report.deliveries.first?.providerID == apnsID)
            let rows = try await recorded(harness)
            #expect(rows.map(\.outcome) == ["delivered"])
            #expect(rows.first?.providerID == apnsID)
            let history = try await harness.store.pipeline(harness.definition.name).history(user: "alice", limit: 5, before: nil)
            #expect(history.count == 1)
        }
    }

    @Test func longTokensAreNotAssumedToBe64Characters() async throws {
        try await withHarness { harness in
            try await harness.register("bob", APNsHarness.longToken)
            let report = try await harness.run { await $0.process(harness.event(user: "bob")) }
            #expect(report.status == .delivered)
            #expect(harness.standIn.requests.first?.token == APNsHarness.longToken)
        }
    }

    @Test func unregisteredTokenIsRemovedUnlessReRegisteredAfterTheTimestamp() async throws {
        try await withHarness { harness in
            try await harness.register("bob", APNsHarness.longToken)
            // APNs saw alice's token dead after she registered it: removed.
            let later = Int64((Date().timeIntervalSince1970 + 60) * 1000)
            harness.standIn.script(.reject(status: 410, reason: "Unregistered", timestamp: later))
            let first = try await harness.run { await $0.process(harness.event()) }
            #expect(first.deliveries.first?.outcome == .dropToken)
            #expect(try await harness.store.pipeline(harness.definition.name).tokens(user: "alice", kind: "device").isEmpty)
            // Bob registered again after the timestamp APNs reports: kept.
            let earlier = Int64((Date().timeIntervalSince1970 - 3600) * 1000)
            harness.standIn.script(.reject(status: 410, reason: "ExpiredToken", timestamp: earlier))
            _ = try await harness.run { await $0.process(harness.event(user: "bob")) }
            #expect(try await harness.store.pipeline(harness.definition.name).tokens(user: "bob", kind: "device").count == 1)
            #expect(harness.standIn.requests.count == 2, "dropped tokens are not retried")
        }
    }

    @Test func badDeviceTokenIsRemoved() async throws {
        try await withHarness { harness in
            harness.standIn.script(.reject(status: 400, reason: "BadDeviceToken"))
            let report = try await harness.run { await $0.process(harness.event()) }
            #expect(report.deliveries.first?.outcome == .dropToken)
            #expect(try await harness.store.pipeline(harness.definition.name).tokens(user: "alice", kind: "device").isEmpty)
        }
    }

    @Test(arguments: [
        (429, "TooManyRequests"), (500, "InternalServerError"), (503, "ServiceUnavailable"), (503, "Shutdown"),
        (400, "IdleTimeout"), (403, "UnrelatedKeyIdInToken"),
        // The token is valid, only rotated too often: a retry, not a configuration error.
        (429, "TooManyProviderTokenUpdates"),
    ])
    func temporaryFailuresAreRetriedWithBackoff(_ status: Int, _ reason: String) async throws {
        try await withHarness { harness in
            harness.standIn.script(.reject(status: status, reason: reason))
            let report = try await harness.run { await $0.process(harness.event()) }
            #expect(report.status == .delivered)
            #expect(report.deliveries.first?.attempts == 2)
            #expect(harness.standIn.requests.count == 2)
            #expect(try await recorded(harness).first?.outcome == "delivered")
        }
    }

    @Test func retriesAreBoundedInAttempts() async throws {
        try await withHarness(
            { harness in
                harness.standIn.script(
                    .reject(status: 503, reason: "ServiceUnavailable"),
                    .reject(status: 503, reason: "ServiceUnavailable"),
                    .reject(status: 503, reason: "ServiceUnavailable")
                )
                let report = try await harness.run { await $0.process(harness.event()) }
                #expect(report.status == .failed)
                #expect(report.deliveries.first?.outcome == .retryAfter)
                #expect(report.deliveries.first?.attempts == 3)
                #expect(harness.standIn.requests.count == 3)
                #expect(try await harness.store.pipeline(harness.definition.name).tokens(user: "alice", kind: "device").count == 1)
            },
            attempts: 3
        )
    }

    @Test(arguments: [
        (400, "TopicDisallowed"), (400, "BadTopic"), (400, "DeviceTokenNotForTopic"), (403, "InvalidProviderToken"),
        (403, "BadEnvironmentKeyIdInToken"), (403, "Forbidden"), (413, "PayloadTooLarge"),
    ])
    func configurationErrorsAreNotRetried(_ status: Int, _ reason: String) async throws {
        try await withHarness { harness in
            harness.standIn.script(.reject(status: status, reason: reason))
            let report = try await harness.run { await $0.process(harness.event()) }
            #expect(report.deliveries.first?.outcome == .configError)
            #expect(report.deliveries.first?.reason?.contains(reason) == true)
            #expect(harness.standIn.requests.count == 1)
            #expect(try await harness.store.pipeline(harness.definition.name).tokens(user: "alice", kind: "device").count == 1)
        }
    }

    @Test func aKeyAPNsDoesNotKnowIsAConfigurationError() async throws {
        try await withHarness(
            { harness in
                let report = try await harness.run { await $0.process(harness.event()) }
                #expect(report.deliveries.first?.outcome == .configError)
                #expect(harness.standIn.requests.first?.rejection == "InvalidProviderToken")
            },
            signingKey: P256.Signing.PrivateKey()
        )
    }

    @Test func expiredProviderTokenGetsANewTokenAndIsRetried() async throws {
        try await withHarness { harness in
            harness.standIn.script(.reject(status: 403, reason: "ExpiredProviderToken"))
            let report = try await harness.run { await $0.process(harness.event()) }
            #expect(report.status == .delivered)
            let requests = harness.standIn.requests
            try #require(requests.count == 2)
            #expect(requests[0].authorization != requests[1].authorization, "a new provider token after ExpiredProviderToken")
        }
    }

    @Test func providerTokenIsReusedAcrossRequests() async throws {
        try await withHarness { harness in
            try await harness.run { processor in
                for _ in 0..<5 { _ = await processor.process(harness.event()) }
            }
            let tokens = Set(harness.standIn.requests.map(\.authorization))
            #expect(harness.standIn.requests.count == 5)
            #expect(tokens.count == 1, "never one provider token per request")
        }
    }

    @Test func goAwayMakesTheNextRequestUseANewConnection() async throws {
        try await withHarness { harness in
            harness.standIn.script(.goAway(reason: "Shutdown"))
            let report = try await harness.run { await $0.process(harness.event()) }
            #expect(report.status == .delivered)
            #expect(harness.standIn.connections == 2)
        }
    }

    @Test func slowAnswersTimeOutAndAreRetried() async throws {
        try await withHarness(
            { harness in
                let report = try await harness.run { processor in
                    // The connection is up first: on a loaded machine its TLS handshake alone may
                    // take longer than the timeout, which is not the slow answer this is about.
                    _ = await processor.process(harness.event(["title": "Hi", "text": "warm", "n": 0]))
                    harness.standIn.script(.delayed(.seconds(60), .accept))
                    return await processor.process(harness.event())
                }
                #expect(report.status == .delivered)
                #expect(report.deliveries.first?.attempts == 2)
            },
            timeout: "3s"
        )  // far under the 60 s answer, and room for the retry on a loaded machine
    }

    /// A request past its timeout is reported as a timeout, not as "closed before an answer":
    /// writing its reset delivers NIOHTTP2's stream-closed event, which must not fail it first,
    /// or operators would see a broken connection where APNs is only slow.
    @Test func aTimedOutRequestSaysItTimedOut() async throws {
        try await withHarness(
            { harness in
                let report = try await harness.run { processor in
                    // The connection is up first (see slowAnswersTimeOutAndAreRetried).
                    _ = await processor.process(harness.event(["title": "Hi", "text": "warm", "n": 0]))
                    harness.standIn.script(.delayed(.seconds(60), .accept))
                    return await processor.process(harness.event())
                }
                #expect(report.status != .delivered)
                #expect(
                    report.deliveries.first?.reason?.contains("no answer within the request timeout") == true,
                    "reason: \(report.deliveries.first?.reason ?? "none")"
                )
            },
            timeout: "3s",
            attempts: 1
        )
    }

    @Test func oversizedPayloadIsRefusedBeforeSending() async throws {
        try await withHarness { harness in
            let report = try await harness.run {
                await $0.process(harness.event(["title": "Hi", "text": .string(String(repeating: "x", count: 5000)), "n": 1]))
            }
            #expect(report.deliveries.first?.outcome == .configError)
            #expect(report.deliveries.first?.reason?.contains("4096") == true)
            #expect(harness.standIn.requests.isEmpty)
        }
    }

    @Test func manyConcurrentNotificationsShareOneConnection() async throws {
        try await withHarness { harness in
            for index in 0..<50 { try await harness.register("user\(index)", String(format: "%064x", index + 1)) }
            let reports = try await harness.processConcurrently(users: 50)
            #expect(reports.allSatisfy { $0.status == .delivered })
            #expect(harness.standIn.requests.count == 50)
            #expect(harness.standIn.requests.allSatisfy { $0.rejection == nil })
            #expect(harness.standIn.connections == 1)
        }
    }

    /// Eight notifications at once whose answers take 200 ms: slow answers keep streams open,
    /// so without a limit all eight would be in flight together. Returns the most at once.
    func sendEightSlowlyAnswered(_ harness: APNsHarness) async throws -> Int {
        for index in 0..<8 { try await harness.register("user\(index)", String(format: "%064x", index + 1)) }
        for _ in 0..<8 { harness.standIn.script(.delayed(.seconds(0.2), .accept)) }
        let reports = try await harness.processConcurrently(users: 8)
        #expect(reports.allSatisfy { $0.status == .delivered })
        #expect(harness.standIn.requests.count == 8)
        #expect(harness.standIn.requests.allSatisfy { $0.rejection == nil })
        #expect(harness.standIn.connections == 1)
        return harness.standIn.mostConcurrentRequests
    }

    @Test func requestsBeyondMaxStreamsWaitForAFreeStream() async throws {
        try await withHarness(
            { harness in
                let mostAtOnce = try await sendEightSlowlyAnswered(harness)
                // The limit, not how many a loaded machine managed to overlap.
                #expect((1...2).contains(mostAtOnce) && harness.standIn.mostConcurrentRequestsOnOneConnection <= 2)
            },
            maxStreams: 2
        )
    }

    /// The server's SETTINGS_MAX_CONCURRENT_STREAMS binds even when `max_streams` allows more.
    @Test func theServersStreamLimitIsHonoured() async throws {
        try await withHarness(
            { harness in
                let mostAtOnce = try await sendEightSlowlyAnswered(harness)
                #expect((1...3).contains(mostAtOnce))
            },
            maxStreams: 100,
            serverStreamLimit: 3
        )
    }

    /// A connection that breaks (here: the server's certificate is not trusted) fails the
    /// requests waiting on it with its own reason, which is what the operator has to read.
    @Test func anUntrustedServerIsReportedAsSuch() async throws {
        var harness = try await APNsHarness.make(attempts: 1)
        try await withCleanup(
            {
                try TestCertificateAuthority().writeCACertificate(to: harness.directory.file("other-ca.pem"))
                try harness.reconfigureTransport { [harness] in $0.caFile = harness.directory.file("other-ca.pem") }
                try await harness.register("alice", APNsHarness.token)
                let report = try await harness.run { [harness] in await $0.process(harness.event()) }
                #expect(report.deliveries.first?.outcome == .retryAfter)
                #expect(report.deliveries.first?.reason?.contains("CERTIFICATE_VERIFY_FAILED") == true, "\(report.deliveries.first?.reason ?? "")")
                #expect(harness.standIn.requests.isEmpty)
            },
            cleanup: harness.close
        )
    }

    /// Nothing is sent before the server's SETTINGS (its stream limit is unknown until then);
    /// a server that never sends them fails the request at its timeout instead of holding it.
    @Test func aServerThatNeverSendsItsSettingsFailsTheRequestAtItsTimeout() async throws {
        var harness = try await APNsHarness.make(timeout: "300ms", attempts: 1)
        let authority = try TestCertificateAuthority()
        try authority.writeCACertificate(to: harness.directory.file("silent-ca.pem"))
        let silent = try await SilentTLSServer.start(authority: authority)
        try await withCleanup(
            {
                try harness.reconfigureTransport { [harness] in
                    $0.baseUrl = silent.baseURL
                    $0.caFile = harness.directory.file("silent-ca.pem")
                }
                try await harness.register("alice", APNsHarness.token)
                let report = try await harness.run { [harness] in await $0.process(harness.event()) }
                #expect(report.deliveries.first?.outcome == .retryAfter)
                #expect(report.deliveries.first?.reason?.contains("SETTINGS") == true, "\(report.deliveries.first?.reason ?? "")")
            },
            cleanup: {
                await silent.stop()
                await harness.close()
            }
        )
    }

    /// Stream ids are never reused: a connection that used its last one finishes its streams and
    /// closes, and requests waiting on it move to a new connection without losing an attempt.
    @Test func aConnectionOutOfStreamIDsMakesWayForANewOne() async throws {
        var harness = try await APNsHarness.make(maxStreams: 2)
        try await withCleanup(
            {
                // Streams 1, 3, 5 and 7: four requests per connection.
                try harness.reconfigureTransport(lastUsableStreamID: 7)
                for index in 0..<10 { try await harness.register("user\(index)", String(format: "%064x", index + 1)) }
                let reports = try await harness.run { [harness] processor in
                    let reports = await harness.processConcurrently(processor, users: 10)
                    // The two used-up connections closed once their streams were answered.
                    try await harness.standIn.waitForOpenConnections(1)
                    return reports
                }
                #expect(reports.allSatisfy { $0.status == .delivered })
                #expect(reports.allSatisfy { $0.deliveries.first?.attempts == 1 }, "moving to a new connection is not a retry")
                #expect(harness.standIn.requests.count == 10)
                #expect(harness.standIn.connections == 3)
            },
            cleanup: harness.close
        )
    }

    /// Answer bodies count against the connection's receive window (64 KiB); without
    /// WINDOW_UPDATE from us the server would stall once that much was sent.
    @Test func answerBodiesBeyondTheReceiveWindowKeepFlowing() async throws {
        try await withHarness(
            { harness in
                for index in 0..<50 { try await harness.register("user\(index)", String(format: "%064x", index + 1)) }
                let reason = String(repeating: "x", count: 2000)  // 50 answers: about 100 KB of DATA
                for _ in 0..<50 { harness.standIn.script(.reject(status: 400, reason: reason)) }
                let reports = try await harness.processConcurrently(users: 50)
                #expect(reports.count == 50)
                #expect(
                    reports.allSatisfy { $0.deliveries.first?.reason?.hasPrefix("400 xxx") == true },
                    "every answer arrived: \(reports.compactMap { $0.deliveries.first?.reason?.prefix(60) }.filter { !$0.hasPrefix("400 xxx") })"
                )
            },
            timeout: "10s",
            attempts: 1
        )  // a stalled window never answers; a loaded machine answers late
    }

    @Test func liveActivityPushesAndDeviceTokensNeverMix() async throws {
        try await withHarness { harness in
            let transport = harness.definition.transport.stage
            let context = StageContext(
                pipeline: harness.definition.name,
                stage: "transport",
                store: harness.store,
                logger: .init(label: "t"),
                mode: .live
            )
            let payload: JSON = ["aps": ["event": "start", "timestamp": 1]]
            func prepare(kind: String, pushType: String) throws -> OutgoingRequest {
                try transport.prepare(
                    RenderedNotification(
                        token: DeviceToken(user: "u", kind: kind, value: APNsHarness.token),
                        payload: payload,
                        options: ["push_type": .string(pushType)]
                    ),
                    context: context
                )
            }
            #expect(throws: StageError.self, "a Live Activity payload never goes to a device token") {
                try prepare(kind: "device", pushType: "liveactivity")
            }
            #expect(throws: StageError.self, "an alert never goes to a push-to-start token") { try prepare(kind: "push-to-start", pushType: "alert") }
            #expect(throws: StageError.self) { try prepare(kind: "activity-update", pushType: "background") }
            let start = try prepare(kind: "push-to-start", pushType: "liveactivity")
            let update = try prepare(kind: "activity-update", pushType: "liveactivity")
            let alert = try prepare(kind: "device", pushType: "alert")
            #expect(start.header("apns-topic") == APNsHarness.bundleID + ".push-type.liveactivity")
            #expect(update.header("apns-push-type") == "liveactivity")
            #expect(alert.header("apns-topic") == APNsHarness.bundleID)
        }
    }
}
