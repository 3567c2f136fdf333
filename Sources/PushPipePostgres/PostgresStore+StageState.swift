import Foundation
import PostgresNIO
import PushPipeCore

extension PostgresStore {
}

extension PostgresPipelineStore {
    func renewHolds(keys: Set<String>, stage: String, lease: Double) async throws {
        try await PostgresWorkQueue(connections: store.connections, logger: store.logger, pipeline: pipeline)
            .renewTaken(WorkItem.holdKind(stage: stage), keys: keys, lease: lease)
    }

    func pruneStates(stage: String, unchangedSince cutoff: Double, limit: Int) async throws -> Int {
        try await store.connections.rows("""
            DELETE FROM stage_state WHERE pipeline = \(pipeline) AND stage = \(stage) AND key IN (
                SELECT key FROM stage_state WHERE pipeline = \(pipeline) AND stage = \(stage) AND updated_at < \(cutoff) LIMIT \(limit))
            RETURNING key
            """).count
    }
}
