import Foundation
import GRDB
import Logging
import Testing

@testable import PushPipeCore
@testable import PushPipePostgres
@testable import PushPipeSQLite

extension StoreContractTests {
    /// Outcomes written with their deliveries wait until claimed; a claim holds them for its
    /// lease; a failed send puts them back for later; a taken one is gone; age prunes the rest.
    func webhookOutbox(_ store: any Store) async throws {
        let outcomes = (1...3).map { index in
            WebhookOutcome(
                pipeline: "w",
                target: "http://127.0.0.1:1/hooks",
                outcomeID: "w/e\(index)/delivered",
                payload: ["n": .int(Int64(index))],
                createdAt: Double(index)
            )
        }
        try await store.pipeline("w").recordOutcome(deliveries: [], state: [], events: [], webhooks: outcomes)
        let claimed = try await store.pipeline("w").work.claimWebhookOutcomes(limit: 2, lease: .seconds(60))
        #expect(claimed.map(\.outcomeID) == ["w/e1/delivered", "w/e2/delivered"], "oldest first")
        #expect(claimed.first?.payload == ["n": 1] && claimed.first?.attempts == 0)
        #expect(
            try await store.pipeline("w").work.claimWebhookOutcomes(limit: 10, lease: .seconds(60)).map(\.outcomeID) == ["w/e3/delivered"],
            "claimed ones are held"
        )
        #expect(try await store.pipeline("other").work.claimWebhookOutcomes(limit: 10, lease: .seconds(60)).isEmpty)

        try await store.pipeline("w").work.complete(WebhookOutcome.kind, keys: [claimed[0].key])
        try await store.pipeline("w").work.retry(WebhookOutcome.kind, keys: [claimed[1].key], after: .seconds(-1))
        let again = try await store.pipeline("w").work.claimWebhookOutcomes(limit: 10, lease: .seconds(60))
        #expect(again.map(\.outcomeID) == ["w/e2/delivered"] && again.first?.attempts == 1, "put back, its attempt counted")
        try await store.pipeline("w").work.retry(WebhookOutcome.kind, keys: Set(again.map(\.key)), after: .seconds(3600))
        #expect(try await store.pipeline("w").work.claimWebhookOutcomes(limit: 10, lease: .seconds(60)).isEmpty, "not due before its backoff")

        #expect(try await store.pipeline("w").work.prune(WebhookOutcome.kind, createdBefore: 2.5, limit: 10) == 1)
        #expect(try await store.pipeline("w").work.prune(WebhookOutcome.kind, createdBefore: 100, limit: 10) == 1)

        try await webhookBatches(store)
        try await refusedWebhookBatches(store)
        try await receiversRetryAfter(store)
        try await twoWebhooksToldOfTheSameOutcomes(store)
    }

    /// Two webhooks that want the same outcomes each get them, in a message of their own: their
    /// batches share a name (it depends on the outcomes alone), which must not make them one
    /// message to the first webhook, then removed for both.
    func twoWebhooksToldOfTheSameOutcomes(_ store: any Store) async throws {
        let targets = ["http://127.0.0.1:1/hooks", "http://127.0.0.1:2/hooks"]
        try await Self.write(
            store,
            targets.flatMap { target in [Self.webhookOutcome("two", "e1", target: target), Self.webhookOutcome("two", "e2", target: target)] }
        )
        let poster = ScriptedWebhookPoster([])
        let dispatcher = WebhookDispatcher(
            targets: targets.map { WebhookTarget(url: $0, secret: "whsec_AAAA") },
            work: store.pipeline("two").work,
            poster: poster,
            telemetry: .unobserved,
            logger: Self.logger
        )
        _ = try await dispatcher.sendDue()
        #expect(poster.targets.sorted() == targets, "\(poster.targets)")
        #expect(poster.sent.allSatisfy { Self.events($0) == ["e1", "e2"] }, "\(poster.sent.map(Self.events))")
        #expect(try await store.pipeline("two").work.claimWebhookOutcomes(limit: 10, lease: .seconds(60)).isEmpty, "all taken")

        // Each webhook's batch is claimed and retried on its own, though the two share an id.
        try await Self.write(store, targets.flatMap { target in [Self.webhookOutcome("two", "e3", target: target)] })
        let work = store.pipeline("two").work
        let both = try await work.claimWebhookOutcomes(limit: 10, lease: .seconds(60))
        #expect(Set(both.map(\.target)) == Set(targets) && Set(both.map(\.batch)).count == 1)
        try await work.retry(WebhookOutcome.kind, keys: Set(both.filter { $0.target == targets[0] }.map(\.key)), after: .seconds(-1))
        try await work.retry(WebhookOutcome.kind, keys: Set(both.filter { $0.target == targets[1] }.map(\.key)), after: .seconds(3600))
        let first = try await work.claimWebhookOutcomes(limit: 10, lease: .seconds(60))
        #expect(first.map(\.target) == [targets[0]], "the second webhook's Retry-After holds: \(first.map(\.target))")
        try await work.complete(WebhookOutcome.kind, keys: Set(first.map(\.key)))
    }

    static func webhookOutcome(_ pipeline: String, _ name: String, target: String = "http://127.0.0.1:1/hooks") -> WebhookOutcome {
        WebhookOutcome(
            pipeline: pipeline,
            target: target,
            outcomeID: "\(pipeline)/\(name)/delivered",
            payload: ["event": .string(name)],
            createdAt: Date().timeIntervalSince1970
        )
    }

    static func write(_ store: any Store, _ outcomes: [WebhookOutcome]) async throws {
        try await store.pipeline(outcomes[0].pipeline).recordOutcome(deliveries: [], state: [], events: [], webhooks: outcomes)
    }

    /// A claim fixes the batch (`webhook-id`) of what it takes: claimed again after its daemon's
    /// lease ran out, the same outcomes come as the same batch, never merged with ones written
    /// since; a batch the limit cuts comes whole; each webhook has its own.
    func webhookBatches(_ store: any Store) async throws {
        try await Self.write(store, [Self.webhookOutcome("b", "e1"), Self.webhookOutcome("b", "e2")])
        // A daemon claims them, and dies: its lease runs out at once.
        let held = try await store.pipeline("b").work.claimWebhookOutcomes(limit: 10, lease: .seconds(-1))
        let batch = try #require(held.first?.batch)
        #expect(held.map(\.batch) == [batch, batch] && batch == WebhookOutcome.batchID(outcomeIDs: ["b/e1/delivered", "b/e2/delivered"]))

        try await Self.write(store, [Self.webhookOutcome("b", "e3"), Self.webhookOutcome("b", "e4", target: "http://127.0.0.1:2/other")])
        let again = try await store.pipeline("b").work.claimWebhookOutcomes(limit: 1, lease: .seconds(-1))
        #expect(
            again.map(\.outcomeID) == ["b/e1/delivered", "b/e2/delivered"] && again.allSatisfy { $0.batch == batch },
            "the same batch, whole though the limit is 1: \(again.map(\.outcomeID))"
        )
        let all = try await store.pipeline("b").work.claimWebhookOutcomes(limit: 10, lease: .seconds(60))
        let byBatch = Dictionary(grouping: all, by: { $0.batch ?? "" }).mapValues { $0.map(\.outcomeID) }
        #expect(
            byBatch == [
                batch: ["b/e1/delivered", "b/e2/delivered"], WebhookOutcome.batchID(outcomeIDs: ["b/e3/delivered"]): ["b/e3/delivered"],
                WebhookOutcome.batchID(outcomeIDs: ["b/e4/delivered"]): ["b/e4/delivered"],
            ],
            "\(byBatch)"
        )
        try await store.pipeline("b").work.complete(WebhookOutcome.kind, keys: Set(all.map(\.key)))
    }

    /// A batch the receiver refused goes again, by the dispatcher, with the same `webhook-id` and
    /// the same outcomes, in the same order: a receiver that drops ids it saw loses nothing and
    /// takes nothing twice. Outcomes written meanwhile go in a batch of their own.
    func refusedWebhookBatches(_ store: any Store) async throws {
        let poster = ScriptedWebhookPoster([.retry(seconds: 0, reason: "HTTP 503")])
        let dispatcher = Self.dispatcher("r", store: store, poster: poster)
        try await Self.write(store, [Self.webhookOutcome("r", "e1"), Self.webhookOutcome("r", "e2")])
        _ = try await dispatcher.sendDue()
        try await Self.write(store, [Self.webhookOutcome("r", "e3")])
        _ = try await dispatcher.sendDue()

        let sent = poster.sent
        try #require(sent.count == 3, "\(sent.map(\.id))")
        #expect(
            sent[1].id == sent[0].id && Self.events(sent[1]) == ["e1", "e2"] && Self.events(sent[0]) == ["e1", "e2"],
            "refused, then again as it was: \(sent.map { "\($0.id) \(Self.events($0))" })"
        )
        #expect(sent[2].id != sent[0].id && Self.events(sent[2]) == ["e3"])
        #expect(try await store.pipeline("r").work.claimWebhookOutcomes(limit: 10, lease: .seconds(60)).isEmpty, "all taken")
    }

    /// A receiver's `Retry-After` of 10 days is cut to `longestRetryAfter`, well before retention
    /// (`longestWait`) would remove the outcomes unsent; a `NaN` or infinite one counts as none:
    /// the dispatcher's own backoff (1 s after a first attempt) is recorded, where a `NaN` would
    /// fail the update, so the batch would go again only when its lease runs out, and again at each.
    func receiversRetryAfter(_ store: any Store) async throws {
        for (index, seconds) in [10 * 86_400, Double.nan, .infinity, -5].enumerated() {
            let pipeline = "ra\(index)"
            let poster = ScriptedWebhookPoster([.retry(seconds: seconds, reason: "HTTP 503")])
            try await Self.write(store, [Self.webhookOutcome(pipeline, "e1")])
            let before = Date().timeIntervalSince1970
            _ = try await Self.dispatcher(pipeline, store: store, poster: poster).sendDue()
            #expect(poster.sent.count == 1)
            let (nextAt, leaseUntil, attempts) = try #require(try await Self.outboxRow(store, pipeline: pipeline))
            let wait = nextAt - before
            #expect(attempts == 1 && leaseUntil == 0, "\(seconds): put back, not left to its lease (\(leaseUntil))")
            if seconds > 86_400 {
                #expect(
                    wait.isFinite && wait <= WebhookDispatcher.longestRetryAfter.inSeconds + 5 && wait < WebhookDispatcher.longestWait.inSeconds,
                    "Retry-After \(seconds) s waited \(wait) s"
                )
            } else {
                #expect(wait.isFinite && wait > 0 && wait <= 1.1 + 5, "Retry-After \(seconds) is none: the backoff, not \(wait) s")
            }
            #expect(try await store.pipeline(pipeline).work.claimWebhookOutcomes(limit: 10, lease: .seconds(60)).isEmpty, "not due at once")
            #expect(try await store.pipeline(pipeline).work.prune(WebhookOutcome.kind, createdBefore: .greatestFiniteMagnitude, limit: 10) == 1)
        }
    }

    static func dispatcher(_ pipeline: String, store: any Store, poster: ScriptedWebhookPoster) -> WebhookDispatcher {
        WebhookDispatcher(
            targets: [WebhookTarget(url: "http://127.0.0.1:1/hooks", secret: "whsec_AAAA")],
            work: store.pipeline(pipeline).work,
            poster: poster,
            telemetry: .unobserved,
            logger: logger
        )
    }

    static func events(_ message: WebhookMessage) -> [String] {
        (message.body["data"]?["outcomes"]?.arrayValue ?? []).compactMap { $0["event"]?.stringValue }
    }

    /// The pipeline's one outbox row as the store keeps it: what no claim shows (when it is due).
    static func outboxRow(_ store: any Store, pipeline: String) async throws -> (nextAt: Double, leaseUntil: Double, attempts: Int)? {
        if let sqlite = store as? SQLiteStore {
            return try await sqlite.database.read { db in
                try Row.fetchOne(
                    db,
                    sql: "SELECT due_at, lease_until, attempts FROM work WHERE pipeline = ? AND kind = 'webhook'",
                    arguments: [pipeline]
                )
                .map { row in ((row["due_at"] as Double?) ?? .nan, row["lease_until"], row["attempts"]) }
            }
        }
        let postgres = try #require(store as? PostgresStore)
        return try await postgres.connections.rows("SELECT due_at, lease_until, attempts FROM work WHERE pipeline = \(pipeline) AND kind = 'webhook'")
            .decode((Double, Double, Int).self).first.map { ($0.0, $0.1, $0.2) }
    }
}
