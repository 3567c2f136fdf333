import Foundation

/// A broadcast's progress (`BroadcastProgress`) is the cursor of a work item of the kind
/// `broadcast`, keyed by its event's id: saved in the commit of each page's deliveries
/// (`DeliveryStore.recordOutcome(…, progress:)`), so a broadcast that stopped, whichever daemon
/// takes it up and whatever its source (a queued event, a reply file sent again), goes on from
/// it. Never due and held by nobody: the queued event or the file is what gets the broadcast
/// run again; the item only says where it stood. The event's record shows the same progress
/// (the status route; a dead letter carries it to its replay), and is where a broadcast an
/// earlier version began, which has no cursor, goes on from. Retention removes a cursor not
/// saved for as long as a record is kept.
extension WorkItem {
    public static let broadcastKind = "broadcast"

    /// The item whose cursor is `progress`, as a page's commit saves it.
    public static func broadcast(eventID: String, _ progress: BroadcastProgress, at time: Double) -> WorkItem {
        WorkItem(kind: broadcastKind, key: eventID, payload: .null, createdAt: time, cursor: progress.json.compactText)
    }

    /// The progress this item's cursor holds; nil when it holds none a reader understands.
    public var broadcastProgress: BroadcastProgress? {
        guard kind == Self.broadcastKind, let cursor, let json = try? JSON.parse(cursor) else { return nil }
        return BroadcastProgress(json: json)
    }
}

extension WorkQueue {
    /// Where the broadcast of event `eventID` stood at its last page's commit: nil if it never
    /// recorded a page (or retention removed it with its record).
    public func broadcastProgress(eventID: String) async throws -> BroadcastProgress? {
        try await item(WorkItem.broadcastKind, key: eventID)?.broadcastProgress
    }
}
