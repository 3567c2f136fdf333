import Testing

@testable import PushPipeCore

/// Each delivered notification's row carries its user's history record for the event, once;
/// history with no delivery becomes a row of its own, after the deliveries.
@Suite struct DeliveryRowTests {
    func delivery(_ event: String, _ user: String, token: String, outcome: String = "delivered") -> DeliveryRecord {
        DeliveryRecord(
            pipeline: "p",
            eventID: event,
            user: user,
            tokenKind: "device",
            token: token,
            outcome: outcome,
            reason: nil,
            providerID: nil,
            attempts: 1,
            createdAt: 1
        )
    }

    func history(_ event: String, _ user: String) -> HistoryEntry {
        HistoryEntry(pipeline: "p", user: user, eventID: event, createdAt: 1, record: ["for": .string("\(event)/\(user)")])
    }

    func recordText(_ row: DeliveryRow) -> String? { row.record?.text }

    @Test func recordsGoToTheFirstDeliveredRowOfTheirUserAndEventInAnyOrder() {
        let deliveries = [
            delivery("e1", "alice", token: "a1", outcome: "retry-after"),  // not delivered: no record
            delivery("e1", "alice", token: "a2"),
            delivery("e1", "alice", token: "a3"),  // alice's second device: the record is taken
            delivery("e1", "bob", token: "b1"),
            delivery("e2", "carol", token: "c1"),
        ]
        // Carol's entry before Bob's (out of order), and one for a user with no delivery.
        let entries = [history("e1", "alice"), history("e2", "carol"), history("e1", "bob"), history("e1", "dave")]
        let rows = DeliveryRow.rows(deliveries: deliveries, history: entries)
        #expect(rows.map(\.delivery.token) == ["a1", "a2", "a3", "b1", "c1", ""])
        #expect(rows.map(recordText) == [nil, #"{"for":"e1/alice"}"#, nil, #"{"for":"e1/bob"}"#, #"{"for":"e2/carol"}"#, #"{"for":"e1/dave"}"#])
        #expect(rows.last?.delivery.outcome == "history")
        #expect(rows.last?.delivery.user == "dave")
    }
}
