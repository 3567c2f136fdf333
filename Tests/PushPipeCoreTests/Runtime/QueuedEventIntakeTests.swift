import Foundation
import Logging
import PushPipeCore
import PushPipeSQLite
import PushPipeTesting
import Testing

/// A claim may return an event this process holds in flight already (its lease lapsed while
/// the store or the machine was slow: SQLite gives a process its own lapsed events). The claim
/// only renews it, since starting it again would send it twice.
@Suite struct QueuedEventIntakeTests {
    /// Takes events and never finishes them; counts what it was given and when claims looked for room.
    final class HoldingSink: EventSink {
        struct Seen {
            var submitted: [String] = []
            var roomReads: [ContinuousClock.Instant] = []
        }

        let seen = ObservedState(Seen())

        func submit(_ event: Event) async throws { seen.update { $0.submitted.append(event.id) } }
        func submitAndWait(_ event: Event) async throws -> EventReport { throw CancellationError() }
        var room: Int {
            seen.update { $0.roomReads.append(.now) }
            return 10
        }
    }

    @Test func anEventInFlightHereIsNotStartedAgainWhenItsLeaseLapses() async throws {
        let directory = try TemporaryDirectory("intake")
        defer { directory.remove() }
        let store = try SQLiteStore(path: directory.file("state.sqlite"))
        try await withCleanup(
            {
                try await store.enqueue(
                    QueuedEvent(
                        pipeline: "p",
                        source: "inbox",
                        eventID: "e1",
                        user: "u",
                        time: Date().timeIntervalSince1970,
                        body: ["n": 1],
                        lease: .seconds(0)
                    )
                )
                // A short lease and no renewals: it lapses while the sink still holds the event.
                let lease = Duration.milliseconds(200)
                let intake = QueuedEventIntake(lease: lease)
                let sink = HoldingSink()
                let context = StageContext(pipeline: "p", stage: "sources[0]", key: "inbox", store: store, logger: Logger(label: "test"), mode: .live)
                let claims = Task { await intake.claimWhileRunning(into: sink, context: context, announcing: "queued events") }
                defer { claims.cancel() }
                let started = try await sink.seen.wait(
                    timeout: 30,
                    { $0.submitted.isEmpty ? nil : ContinuousClock.now },
                    failure: { _ in WaitTimedOut("the event was never claimed") }
                )
                // Two claims that began after the lease had lapsed have run once a third one looks for room.
                let lapsed = started + lease * 1.5
                try await sink.seen.wait(
                    timeout: 30,
                    { $0.roomReads.filter { $0 > lapsed }.count >= 3 ? () : nil },
                    failure: { _ in WaitTimedOut("no claim after the lease lapsed") }
                )
                #expect(sink.seen.value.submitted == ["e1"], "started once while in flight here")
                #expect(intake.leases.heldKeys.map { $0.prefix(while: { $0 != "\n" }) } == ["e1"], "and still held once")
            },
            cleanup: { try? await store.close() }
        )
    }
}
