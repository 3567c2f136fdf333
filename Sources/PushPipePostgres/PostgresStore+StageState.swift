import Foundation
import PostgresNIO
import PushPipeCore

extension PostgresStore {
    public func hold(keys: Set<String>, pipeline: String, stage: String, lease: Double) async throws -> Set<String> {
        let work = self.work(pipeline: pipeline)
        return try await work.take(PostgresWorkQueue.holdKind(stage: stage), keys: keys, lease: lease)
    }

    public func release(keys: Set<String>, pipeline: String, stage: String) async throws {
        try await work(pipeline: pipeline).complete(PostgresWorkQueue.holdKind(stage: stage), keys: keys)
    }

    public func renewHolds(keys: Set<String>, pipeline: String, stage: String, lease: Double) async throws {
        try await PostgresWorkQueue(connections: connections, logger: logger, pipeline: pipeline)
            .renewTaken(PostgresWorkQueue.holdKind(stage: stage), keys: keys, lease: lease)
    }

    public func pruneStates(pipeline: String, stage: String, unchangedSince cutoff: Double, limit: Int) async throws -> Int {
        try await connections.rows("""
            DELETE FROM stage_state WHERE pipeline = \(pipeline) AND stage = \(stage) AND key IN (
                SELECT key FROM stage_state WHERE pipeline = \(pipeline) AND stage = \(stage) AND updated_at < \(cutoff) LIMIT \(limit))
            RETURNING key
            """).count
    }

    public func pruneLapsedHolds(pipeline: String) async throws -> Int {
        try await work(pipeline: pipeline).forgetLapsedTakes(kindsStartingWith: PostgresWorkQueue.holdKinds)
    }
}
