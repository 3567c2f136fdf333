/// Held events (`EventHold`) as the store keeps them: under the event's id, or, for a send
/// a caller may replace or cancel (`EventHold.replaceKey`), under that key, so one lookup of an
/// index range finds the pending sends of a key.
extension QueuedEvent {
    public static var heldKind: String { kind(source: QueuedEventIntake.heldKey) }

    /// Where the pending sends of `replaceKey` wait: the key escaped, so one key is never the
    /// start of another.
    public static func replacePrefix(_ replaceKey: String) -> String {
        "\u{1}replace\n" + replaceKey.replacingOccurrences(of: "%", with: "%25").replacingOccurrences(of: "\n", with: "%0A") + "\n"
    }

    /// The key of an event's `holds`-th hold: the same decision made twice is stored once. A
    /// recurring send's waits are told apart by their instant (`until`) instead: its hold of
    /// the next occurrence takes the place of the last, so the count stays.
    static func heldKey(eventID: String, holds: Int, replaceKey: String?, until: Double? = nil) -> String {
        (replaceKey.map(replacePrefix) ?? "") + keyPrefix(eventID: StoredText.storable(eventID)) + "hold-\(holds)"
            + (until.map { "@\(Int64($0.rounded(.down)))" } ?? "")
    }

    /// What its record says once it was withdrawn (`replaced`, `cancelled`): it will not be sent.
    public func withdrawnRecord(code: String, reason: String, at now: Double) -> EventRecord {
        EventRecord(
            pipeline: pipeline,
            eventID: eventID,
            state: .dropped,
            source: origin ?? source,
            caller: caller,
            user: user,
            stage: holds.last?.stage,
            code: code,
            reason: reason,
            acceptedAt: time,
            updatedAt: now
        )
    }
}

extension WorkQueue {
    /// Withdraws the pending sends of `replaceKey` that `caller` posted (none of another
    /// caller's, and none on its way already), except `eventID`'s and its copies' (`<id>@…`,
    /// one per zone or occurrence); returns them.
    public func withdrawHeld(replaceKey: String, caller: String?, except eventID: String? = nil) async throws -> [QueuedEvent] {
        let items = try await withdraw(QueuedEvent.heldKind, keysStartingWith: QueuedEvent.replacePrefix(replaceKey)) { item in
            guard item.payload["caller"]?.stringValue == caller else { return false }
            guard let eventID, let id = item.payload["event_id"]?.stringValue else { return true }
            return id != eventID && !id.hasPrefix(eventID + "@")
        }
        return items.compactMap { try? QueuedEvent(work: $0, pipeline: pipeline, owner: nil, lease: .zero) }
    }
}
