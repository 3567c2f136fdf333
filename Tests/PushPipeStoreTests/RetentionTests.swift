import Foundation
import GRDB
import PushPipeStages
import PushPipeTesting
import Testing

@testable import PushPipeCore
@testable import PushPipeSQLite

/// Retention prunes `deliveries` and history, which would otherwise grow forever.
@Suite struct RetentionTests {
    let day = 86400.0

    /// One delivered notification with its history record, `age` seconds old.
    func deliver(_ store: SQLiteStore, user: String, age: Double, now: Date, number: Int) async throws {
        let createdAt = now.timeIntervalSince1970 - age
        let event = "e-\(user)-\(number)"
        try await store.pipeline("p").recordOutcome(
            deliveries: [.of(event, user: user, token: "ab", at: createdAt, history: ["n": .int(Int64(number))])],
            state: []
        )
    }

    @Test func oldRowsGoAndEachUserKeepsItsNewestAndHistoryPagesAcrossPruning() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let store = try SQLiteStore(path: directory.file("state.sqlite"))
        let clock = ManualClock()
        let now = Date(timeIntervalSince1970: clock.now)
        // alice: 10 rows 200 days old, then 20 recent ones; bob: 5 recent; another pipeline's old row stays.
        for number in 0..<10 { try await deliver(store, user: "alice", age: 200 * day, now: now, number: number) }
        for number in 10..<30 { try await deliver(store, user: "alice", age: day - Double(number), now: now, number: number) }
        for number in 0..<5 { try await deliver(store, user: "bob", age: day, now: now, number: number) }
        try await store.pipeline("other").recordOutcome(
            deliveries: [
                DeliveryRow.of("x", user: "alice", token: "ab", at: now.timeIntervalSince1970 - 300 * day)
            ],
            state: []
        )
        // A broadcast's cursor as old as the rows, and a recent one.
        for (event, age) in [("old-broadcast", 200 * day), ("new-broadcast", day)] {
            try await store.pipeline("p").recordOutcome(
                deliveries: [],
                state: [],
                events: [],
                webhooks: [],
                finishing: [],
                progress: [.broadcast(eventID: event, BroadcastProgress(after: "alice"), at: now.timeIntervalSince1970 - age)]
            )
        }

        let firstPage = try await store.pipeline("p").history(user: "alice", limit: 5, before: nil)
        #expect(firstPage.map { $0.record["n"] } == [29, 28, 27, 26, 25])

        let pruner = RetentionPruner(
            policy: RetentionPolicy(maxAge: .seconds(180 * day), perUser: 15, interval: .seconds(3600)),
            store: store.pipeline("p"),
            logger: .init(label: "retention"),
            clock: clock
        )
        #expect(await pruner.pruneOnce() == 15, "10 by age, 5 beyond alice's newest 15")
        #expect(await pruner.pruneOnce() == 0, "nothing left to prune")

        // The cursor of the page read before pruning still works.
        let secondPage = try await store.pipeline("p").history(user: "alice", limit: 100, before: firstPage.last?.id)
        #expect(secondPage.map { $0.record["n"] } == (15..<25).reversed().map { .int(Int64($0)) })
        #expect(try await store.pipeline("p").history(user: "bob", limit: 100, before: nil).count == 5)
        let counts = try await DatabaseQueue(path: directory.file("state.sqlite")).read { db in
            (
                try Int.fetchOne(db, sql: "SELECT count(*) FROM deliveries WHERE pipeline = 'other'") ?? -1,
                try Int.fetchOne(db, sql: "SELECT count(*) FROM user_deliveries WHERE pipeline = 'p'") ?? -1
            )
        }
        #expect(counts.0 == 1, "another pipeline's retention is its own")
        #expect(counts.1 == 20, "the per-user index lost the pruned rows too")
        #expect(try await store.pipeline("p").work.broadcastProgress(eventID: "old-broadcast") == nil, "gone with its age")
        #expect(try await store.pipeline("p").work.broadcastProgress(eventID: "new-broadcast")?.after == "alice")
        try await store.close()
    }

    @Test func theAgeScanStopsAtTheLastOldRow() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let store = try SQLiteStore(path: directory.file("state.sqlite"))
        let now = Date()
        for number in 0..<7 { try await deliver(store, user: "u", age: Double(100 - number * 10) * day, now: now, number: number) }
        let boundary = try await store.database.read { db in try SQLiteStore.lastRow(createdBefore: now.timeIntervalSince1970 - 65 * day, in: db) }
        #expect(boundary == 4, "rows 1-4 are 100, 90, 80 and 70 days old")
        #expect(try await store.pipeline("p").pruneDeliveries(createdBefore: now.timeIntervalSince1970 - 65 * day, limit: 2) == 2)
        #expect(try await store.pipeline("p").pruneDeliveries(createdBefore: now.timeIntervalSince1970 - 65 * day, limit: 2) == 2)
        #expect(try await store.pipeline("p").pruneDeliveries(createdBefore: now.timeIntervalSince1970 - 65 * day, limit: 2) == 0)
        try await store.close()
    }

    @Test func retentionIsConfiguredPerPipelineWithBoundedDefaults() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        func pipeline(_ name: String) -> String {
            "pipeline: \(name)\nsources: [{type: http.event, path: /\(name)}]\nrenderer: {type: json.template, payload: {}}\ntransport: {type: stdout}\n"
        }
        let defaults = try directory.write("a.yaml", pipeline("a"))
        let custom = try directory.write("b.yaml", pipeline("b") + "retention: {max_age: 30d, per_user: 200}\n")
        let bad = try directory.write("c.yaml", pipeline("c") + "retention: {per_user: -1}\n")
        let result = await ConfigLoader(builtins: BuiltinStages.all, interpolation: EnvironmentInterpolation(environment: [:]))
            .load(pipelineFiles: [defaults, custom, bad], pluginsDirectory: nil)
        #expect(
            result.pipelines.first { $0.name == "a" }?.retention
                == RetentionPolicy(maxAge: .seconds(180 * day), perUser: 1000, interval: .seconds(3600))
        )
        #expect(
            result.pipelines.first { $0.name == "b" }?.retention
                == RetentionPolicy(maxAge: .seconds(30 * day), perUser: 200, interval: .seconds(3600))
        )
        #expect(result.diagnostics.contains { $0.description.contains("retention.per_user") })
    }
}
