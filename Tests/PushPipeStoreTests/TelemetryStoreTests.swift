import PushPipeTesting
import Testing

@testable import PushPipeCore
@testable import PushPipeHTTP
@testable import PushPipeSQLite

/// What operators see of the store: its commits and, for SQLite, its WAL checkpoints.
@Suite(.timeLimit(.minutes(1))) struct TelemetryStoreTests {
    static let background = #"pushpipe_store_checkpoint_seconds_count{kind="background"}"#
    static let catchUp = #"pushpipe_store_checkpoint_seconds_count{kind="catch_up"}"#

    @Test func aSQLiteStoresCheckpointsAreExported() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let telemetry = Telemetry.prometheus()
        let store = try SQLiteStore(
            path: directory.file("state.sqlite"),
            checkpointThreshold: SQLiteCheckpointerTests.threshold,
            observers: telemetry.storeObservers(named: "sqlite")
        )
        #expect(!telemetry.exposition().contains("pushpipe_store_checkpoint_seconds"))
        // A background pass runs beside the writer; the writer's catch-up comes at a commit
        // after it ended. Writes go on until both were counted (each within a few writes).
        var written = 0
        var samples: [String: Double] = [:]
        repeat {
            try await store.appendHistory(SQLiteCheckpointerTests.entry(written))
            written += 1
            samples = prometheusSamples(telemetry.exposition())
        } while written < 5_000 && ((samples[Self.background] ?? 0) < 1 || (samples[Self.catchUp] ?? 0) < 1)
        try await store.close()
        #expect((samples[Self.background] ?? 0) >= 1)
        #expect((samples[Self.catchUp] ?? 0) >= 1)
        #expect((samples["pushpipe_store_wal_frames"] ?? 0) >= Double(SQLiteCheckpointerTests.threshold))
        #expect(samples[#"pushpipe_store_commit_seconds_count{store="sqlite"}"#] == Double(written))
    }
}
