import Foundation
import Logging
import PostgresNIO
import PushPipeCore

extension PostgresStore {
    /// A batch's stage state (watermarks, per-device progress) in at most two statements
    /// however many events it holds, where a statement per write made a round trip per
    /// event: values that replace, and watermarks that only move forward. Writes to one key
    /// are first folded into one (ON CONFLICT may not touch a row twice): the last of values
    /// that replace, the largest of watermarks. A key written both ways in one batch, or a
    /// watermark that is not a finite number, keeps a statement per write, in order.
    static func writeStates(
        _ batches: [(writes: [StateWrite], pipeline: String)],
        on connection: PostgresConnection,
        logger: Logger
    )
        async throws
    {
        var keys: [[UInt8]] = []
        var writes: [[UInt8]: [(pipeline: String, write: StateWrite)]] = [:]
        for (batch, pipeline) in batches {
            for write in batch {
                let key = storedKey(pipeline, write.stage, write.key)
                if writes[key] == nil { keys.append(key) }
                writes[key, default: []].append((pipeline, write))
            }
        }
        var replacing = StateColumns()
        var forward = StateColumns()
        var oneByOne: [(pipeline: String, write: StateWrite)] = []
        for key in keys {
            let all = writes[key] ?? []
            guard let first = all.first, all.allSatisfy({ $0.write.onlyForward == first.write.onlyForward }) else {
                oneByOne += all
                continue
            }
            if !first.write.onlyForward {
                replacing.append(all[all.count - 1].write, pipeline: first.pipeline)
            } else if let largest = all.max(by: { ($0.write.value.doubleValue ?? .nan) < ($1.write.value.doubleValue ?? .nan) }),
                all.allSatisfy({ $0.write.value.doubleValue?.isFinite == true })
            {
                forward.append(largest.write, pipeline: first.pipeline)
            } else {
                oneByOne += all
            }
        }
        let now = Date().timeIntervalSince1970
        for (columns, onlyForward) in [(replacing, false), (forward, true)] where !columns.pipeline.isEmpty {
            let forwardOnly = onlyForward ? "WHERE stage_state.value::double precision < excluded.value::double precision" : ""
            try await connection.query(
                """
                INSERT INTO stage_state (pipeline, stage, key, value, updated_at)
                SELECT p, s, k, v, \(now) FROM unnest(\(columns.pipeline)::text[], \(columns.stage)::text[], \(columns.key)::text[],
                    \(columns.value)::text[]) AS t(p, s, k, v)
                ON CONFLICT (pipeline, stage, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at
                \(unescaped: forwardOnly)
                """,
                logger: logger
            )
        }
        for (pipeline, write) in oneByOne {
            // CASE, not OR: only a watermark's row is read as a number (another row may hold
            // an object, `DeliveredDevices`), and OR does not promise to skip its second half.
            try await connection.query(
                """
                INSERT INTO stage_state (pipeline, stage, key, value, updated_at) VALUES (\(pipeline), \(write.stage), \(write.key),
                \(write.value.compactText), \(now))
                ON CONFLICT (pipeline, stage, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at
                WHERE CASE WHEN \(write.onlyForward) THEN stage_state.value::double precision < excluded.value::double precision ELSE true END
                """,
                logger: logger
            )
        }
    }
}

/// Stage state rows as the columns `unnest` reads.
private struct StateColumns {
    var pipeline: [String] = []
    var stage: [String] = []
    var key: [String] = []
    var value: [String] = []

    mutating func append(_ write: StateWrite, pipeline: String) {
        self.pipeline.append(pipeline)
        stage.append(write.stage)
        key.append(write.key)
        value.append(write.value.compactText)
    }
}
