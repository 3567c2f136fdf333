import Foundation
import PushPipeTesting
import Testing

@testable import PushPipeCore
@testable import PushPipeStages

/// A batch of notifications goes to APNs as one send on one connection; each request
/// still gets its own outcome, in order, whatever the others' answers.
@Suite struct APNsBatchTests {
    @Test func aBatchsRequestsShareOneConnectionAndKeepTheirOwnOutcomes() async throws {
        let harness = try await APNsHarness.make(attempts: 2)
        try await withCleanup(
            {
                let tokens = (0..<4).map { String(format: "%064x", $0 + 1) }
                for (index, token) in tokens.enumerated() { try await harness.register("user\(index)", token) }
                harness.standIn.answer { request in
                    switch request.token {
                    case tokens[1]: .reject(status: 410, reason: "Unregistered", timestamp: 1_700_000_000_000)
                    case tokens[2]: .reject(status: 400, reason: "BadTopic")
                    default: .accept
                    }
                }
                let events = (0..<4).map { harness.event(user: "user\($0)") }
                let started = try await harness.run { await $0.start(events) }
                #expect(started.followUps.isEmpty)
                let outcomes = Dictionary(uniqueKeysWithValues: started.reports.map { ($0.eventID, $0.deliveries.first?.outcome) })
                #expect(events.map { outcomes[$0.id] } == [.delivered, .dropToken, .configError, .delivered])
                #expect(harness.standIn.requests.count == 4)
                #expect(harness.standIn.connections == 1)
                let accepted = started.reports.filter { $0.status == .delivered }.compactMap { $0.deliveries.first?.providerID }
                #expect(
                    Set(accepted)
                        == Set(
                            harness.standIn.requests.filter { $0.rejection == nil && ![tokens[1], tokens[2]].contains($0.token) }
                                .map(\.apnsID)
                        ),
                    "each answer reaches its own request"
                )
            },
            cleanup: harness.close
        )
    }
}
