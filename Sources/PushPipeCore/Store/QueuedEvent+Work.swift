import Synchronization

/// Accepted events wait as work items (`WorkQueue`), one kind per source: claimed when their
/// lease lapses (a daemon that died, or one that let go of them), renewed while processed,
/// completed once their processing ended.
extension QueuedEvent {
    /// The kinds of queued events start with it (`queuedEventCounts`, the status lookup).
    public static let kinds = "event:"

    public static func kind(source: String) -> String { kinds + source }

    /// The source whose kind `kind` is, if it is one.
    public static func source(ofKind kind: String) -> String? {
        kind.hasPrefix(kinds) ? String(kind.dropFirst(kinds.count)) : nil
    }

    /// The event id, a newline and a nonce. A lookup by event id reads the keys that start with
    /// the id and a newline, and keeps those whose payload names the id (another id may hold a newline).
    /// The id as stored (a NUL replaced): a claim returns the key the store kept, which must be
    /// the one the intake holds.
    static func key(eventID: String) -> String {
        StoredText.storable(eventID) + "\n" + String(nonces.wrappingAdd(1, ordering: .relaxed).newValue, radix: 36)
    }

    /// Nonces: from a random start, one after another. As unlikely to meet another process's as
    /// a random one each, without asking the system for randomness at every accepted event.
    private static let nonces = Atomic<UInt64>(UInt64.random(in: .min ... .max))

    public static func keyPrefix(eventID: String) -> String { eventID + "\n" }

    public var kind: String { Self.kind(source: source) }

    /// As the store keeps it, held by `instance` for `lease` from when it is stored.
    public var work: WorkItem {
        WorkItem(kind: kind, key: key, payload: (try? JSON.parse(storedPayload)) ?? .null, createdAt: time)
    }

    /// The item's payload as the store keeps it, written straight to text: every accepted
    /// event's is, in the commit its 202 waits for, and a `JSON` dictionary built first (its
    /// keys sorted when serialized) cost more than the row's insert.
    public var storedPayload: String {
        var writer = JSONObjectWriter(capacity: 192)
        writer.add("event_id", eventID)
        writer.add("time", time)
        writer.add("body", json: body)
        writer.add("user", user)
        writer.add("caller", caller)
        if let replayOf { writer.add("replay_of", json: (try? JSON.parse(QueuedEvent.storedReplay(replayOf))) ?? .null) }
        writer.add("trace_parent", traceParent)
        writer.add("origin", origin)
        if let audience { writer.add("audience", json: audience.json) }
        if !holds.isEmpty { writer.add("holds", json: .array(holds.map { ["stage": .string($0.stage), "until": .double($0.until)] })) }
        return String(decoding: writer.finished(), as: UTF8.self)
    }

    /// The event an item of `kind(source:)` holds; throws for an item it cannot read.
    public init(work: WorkItem, pipeline: String, owner: String?, lease: Duration) throws {
        let payload = work.payload
        guard let source = Self.source(ofKind: work.kind), let eventID = payload["event_id"]?.stringValue, let time = payload["time"]?.doubleValue
        else {
            throw UnreadableQueuedEvent(kind: work.kind, key: work.key)
        }
        self.init(
            pipeline: pipeline,
            source: source,
            instance: owner ?? "",
            eventID: eventID,
            user: payload["user"]?.stringValue,
            time: time,
            body: payload["body"] ?? .object([:]),
            lease: lease
        )
        key = work.key
        caller = payload["caller"]?.stringValue
        traceParent = payload["trace_parent"]?.stringValue
        origin = payload["origin"]?.stringValue
        audience = Audience(json: payload["audience"])
        holds = (payload["holds"]?.arrayValue ?? []).compactMap { hold in
            hold["stage"]?.stringValue.flatMap { stage in hold["until"]?.doubleValue.map { PassedHold(stage: stage, until: $0) } }
        }
        if let replay = payload["replay_of"], replay.objectValue != nil {
            replayOf = try QueuedEvent.replay(stored: replay.compactText, pipeline: pipeline, eventID: eventID)
        }
    }
}

/// A queued event's item this version cannot read (a later version's): left where it is.
public struct UnreadableQueuedEvent: Error, CustomStringConvertible {
    public var kind: String
    public var key: String

    public var description: String { "a queued event of kind '\(kind)' that this version cannot read" }
}
