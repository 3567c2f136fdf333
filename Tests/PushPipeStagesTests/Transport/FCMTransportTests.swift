import Foundation
import PushPipeCore
import PushPipeTesting
import Testing

/// FCM's answers (Firebase's "FCM error codes" for the HTTP v1 API) and OAuth token handling
/// against the stand-in.
@Suite struct FCMTransportTests {
    typealias H = FCMHarness

    @Test func deliveredMessageRecordsTheFCMName() async throws {
        try await H.with { harness in
            let report = try await harness.run { await $0.process(harness.event()) }
            #expect(report.status == .delivered)
            let send = try #require(harness.standIn.sends.first)
            #expect(send.rejection == nil)
            #expect(send.projectID == H.project)
            #expect(send.message?["token"] == "fcm-token-alice")
            #expect(send.message?["data"] == ["id": .string(report.eventID), "type": "upvote", "count": "3"], "data values travel as strings")
            #expect(report.deliveries.first?.providerID?.hasPrefix("projects/\(H.project)/messages/") == true)
            #expect(harness.standIn.tokenRequests == 1)
            #expect(harness.standIn.assertionProblems.isEmpty)
            let history = try await harness.store.pipeline(harness.definition.name).history(user: "alice", limit: 5, before: nil)
            #expect(history.first?.record["notification"] == ["title": "Hi", "body": "there"])
        }
    }

    @Test(arguments: [
        (404, "UNREGISTERED", "Requested entity was not found.", "drop-token"),
        (403, "SENDER_ID_MISMATCH", "SenderId mismatch", "drop-token"),
        (400, "INVALID_ARGUMENT", "The registration token is not a valid FCM registration token", "drop-token"),
        (400, "INVALID_ARGUMENT", "Invalid value at 'message.data[0].value'", "config-error"),
        (401, "THIRD_PARTY_AUTH_ERROR", "Auth error from APNS or Web Push Service", "config-error"),
    ])
    func permanentOutcomes(_ status: Int, _ code: String, _ message: String, _ outcome: String) async throws {
        try await H.with { harness in
            harness.standIn.script(.error(status: status, errorCode: code, message: message))
            let report = try await harness.run { await $0.process(harness.event()) }
            #expect(report.deliveries.first?.outcome.rawValue == outcome)
            #expect(harness.standIn.sends.count == 1, "not retried")
            let remaining = try await harness.store.pipeline(harness.definition.name).tokens(user: "alice", kind: "fcm")
            #expect(remaining.isEmpty == (outcome == "drop-token"))
        }
    }

    @Test(arguments: [(429, "QUOTA_EXCEEDED"), (503, "UNAVAILABLE"), (500, "INTERNAL")])
    func temporaryOutcomesAreRetriedHonouringRetryAfter(_ status: Int, _ code: String) async throws {
        try await H.with { harness in
            harness.standIn.script(.error(status: status, errorCode: code, message: "try later", retryAfter: 1))
            let started = ContinuousClock.now
            let report = try await harness.run { await $0.process(harness.event()) }
            #expect(report.status == .delivered)
            #expect(report.deliveries.first?.attempts == 2)
            #expect(ContinuousClock.now - started >= .seconds(1), "Retry-After was honoured")
        }
    }

    @Test func revokedAccessTokenIsRefreshedOnceAndTheSendRetried() async throws {
        try await H.with { harness in
            let (first, second) = try await harness.run { processor in
                let first = await processor.process(harness.event())
                harness.standIn.revokeAccessTokens()
                return (first, await processor.process(harness.event()))
            }
            #expect(first.status == .delivered)
            #expect(second.status == .delivered)
            #expect(second.deliveries.first?.attempts == 2)
            #expect(harness.standIn.tokenRequests == 2)
            let tokens = harness.standIn.sends.map(\.accessToken)
            #expect(tokens.count == 3 && tokens[1] == tokens[0] && tokens[2] != tokens[1])
        }
    }

    @Test func expiringAccessTokenIsRenewedBeforeUse() async throws {
        try await H.with { harness in
            // A token that lives 60 s is renewed at once: pushpipe refreshes a minute early.
            harness.standIn.setTokenLifetime(60)
            try await harness.run { processor in
                _ = await processor.process(harness.event())
                _ = await processor.process(harness.event())
            }
            #expect(harness.standIn.tokenRequests == 2)
            #expect(harness.standIn.sends.allSatisfy { $0.rejection == nil })
        }
    }

    @Test func concurrentSendsShareOneTokenRequest() async throws {
        try await H.with { harness in
            for index in 0..<30 {
                try await harness.store.pipeline(harness.definition.name).register(
                    DeviceToken(user: "u\(index)", kind: "fcm", value: "token-\(index)"),
                    environment: nil,
                    replace: false
                )
            }
            let reports = try await harness.run { processor in
                await withTaskGroup(of: EventReport.self) { group in
                    for index in 0..<30 { group.addTask { await processor.process(harness.event(user: "u\(index)")) } }
                    return await group.reduce(into: [EventReport]()) { $0.append($1) }
                }
            }
            #expect(reports.allSatisfy { $0.status == .delivered })
            #expect(harness.standIn.tokenRequests == 1)
        }
    }

    @Test func disabledUserGetsNothing() async throws {
        try await H.with { harness in
            try await harness.store.pipeline(harness.definition.name).setSettings(["enabled": false], user: "alice")
            let report = try await harness.run { await $0.process(harness.event()) }
            #expect(report.status == .filtered)
            #expect(harness.standIn.sends.isEmpty)
            #expect(harness.standIn.tokenRequests == 0)
        }
    }

    @Test func validateOnlyIsFCMsOwnDryRun() async throws {
        try await H.with(validateOnly: true) { harness in
            _ = try await harness.run { await $0.process(harness.event()) }
            #expect(harness.standIn.sends.first?.validateOnly == true)
        }
    }
}
