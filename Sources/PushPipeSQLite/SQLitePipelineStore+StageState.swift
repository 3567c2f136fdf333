import Foundation
import GRDB
import PushPipeCore

/// Stages' values (watermarks, read through `StateMirror`) and holds, kept in memory: one daemon per file.
extension SQLitePipelineStore {
    func states(stage: String, keys: [String]) async throws -> [String: JSON] {
        guard !keys.isEmpty else { return [:] }
        // A key is looked up as its write stored it (`StoredText`), and answered as asked.
        let stored = keys.map { key -> String in StoredText.storable(key) }
        guard stored == keys else {
            let values = try await storedStates(stage: stage, keys: stored)
            return Dictionary(
                zip(keys, stored).compactMap { key, storedKey in values[storedKey].map { (key, $0) } },
                uniquingKeysWith: { first, _ in first }
            )
        }
        return try await storedStates(stage: stage, keys: keys)
    }

    private func storedStates(stage: String, keys: [String]) async throws -> [String: JSON] {
        let mirrored = StateMirror.Stage(pipeline: pipeline, stage: stage)
        switch store.stateMirror.values(of: keys, in: mirrored) {
        case .found(let values): return values
        case .tooLarge: return try await readStates(stage: stage, keys: keys)
        case .notLoaded:
            try await loadMirror(of: mirrored)
            return try await storedStates(stage: stage, keys: keys)
        }
    }

    /// Reads a stage's rows into the mirror on the writer's queue, where committed changes are
    /// applied: no commit can land between the read and the install.
    private func loadMirror(of stage: StateMirror.Stage) async throws {
        let mirror = store.stateMirror
        try await store.database.writeWithoutTransaction { db in
            guard !mirror.isLoaded(stage) else { return }
            var values: [String: JSON] = [:]
            let rows = try Row.fetchCursor(
                db,
                sql: "SELECT key, value FROM stage_state WHERE pipeline = ? AND stage = ?",
                arguments: [stage.pipeline, stage.stage]
            )
            while let row = try rows.next() {
                guard values.count < mirror.capacity else { return mirror.install(nil, for: stage) }
                values[row["key"]] = try JSON.parse(row["value"] as String)
            }
            mirror.install(values, for: stage)
        }
    }

    private func readStates(stage: String, keys: [String]) async throws -> [String: JSON] {
        let rows: [(String, String)] = try await store.read { db in
            // One statement per number of keys, parsed once per connection.
            let placeholders = Array(repeating: "?", count: keys.count).joined(separator: ",")
            let statement = try db.cachedStatement(
                sql: "SELECT key, value FROM stage_state WHERE pipeline = ? AND stage = ? AND key IN (\(placeholders))"
            )
            // Existentials, not `[String]`: the generic initializer makes a key path at run time per call.
            let arguments = StatementArguments(([pipeline, stage] + keys).map { $0 as (any DatabaseValueConvertible)? })
            return try Row.fetchAll(statement, arguments: arguments).map { ($0["key"], $0["value"]) }
        }
        return try [String: JSON](parsing: rows)
    }

    /// The mirror's copy of the stage is dropped in the same write, on the writer's queue: the
    /// next read loads what is left.
    func pruneStates(stage: String, unchangedSince cutoff: Double, limit: Int) async throws -> Int {
        let mirror = store.stateMirror
        return try await store.database.write { db in
            try db.execute(
                sql: """
                    DELETE FROM stage_state WHERE rowid IN (
                        SELECT rowid FROM stage_state WHERE pipeline = ? AND stage = ? AND updated_at < ? LIMIT ?)
                    """,
                arguments: [pipeline, stage, cutoff, limit]
            )
            let removed = db.changesCount
            if removed > 0 { mirror.forget(StateMirror.Stage(pipeline: pipeline, stage: stage)) }
            return removed
        }
    }

    func hold(keys: Set<String>, stage: String, lease: Duration) async throws -> Set<String> {
        store.held.claim(keys, pipeline: pipeline, stage: stage)
    }

    func release(keys: Set<String>, stage: String) async throws {
        store.held.release(keys, pipeline: pipeline, stage: stage)
    }

    /// Held in memory until released: a daemon that dies takes its holds with it.
    func renewHolds(keys: Set<String>, stage: String, lease: Duration) async throws {}
}
