import Foundation
import PushPipeCore

/// Drops items already notified, by a durable watermark that moves only after delivery.
///
/// Why not "last notification time" (the original OGS server's approach): comparing an
/// item's timestamp with the wall-clock time of the last send loses every item that changed
/// between the fetch and the send — its timestamp is older than the send, so it looks old
/// forever. The watermark here is the newest item timestamp that was *actually delivered*,
/// taken from the data itself, and it is written only when the transport accepted the
/// notification: a failed or retried delivery leaves it alone and the next check retries.
/// It moves once every device of the user got the items; until then the devices that did are
/// kept beside it (`DeliveredDevices`), so the next checks retry only the failing ones.
struct TimestampDedupeFilter: Filter, LongRunningStage {
    static let summary = "Keeps only items newer than the delivered watermark (per key or per item); drops the event when none is left."

    struct Configuration: StageConfiguration {
        var items: String
        var timestamp: String
        var itemId: String?
        var key: String?
        var newestFirst: Bool
        var state: String
        @Seconds var hold: Duration
        @Seconds var forgetAfter: Duration

        static let schema = Schema([
            .required("items", .string, "Path of the item list in the event body, e.g. `games`."),
            .required("timestamp", .string, "Timestamp field of an item (any number: ms or s), e.g. `last_move`."),
            SchemaKey("item_id", .string, "Item field for one watermark per key and item (e.g. `game_id`); without it, one watermark per key."),
            SchemaKey("key", .string, "Body path naming the watermark owner; the event's user when omitted."),
            SchemaKey("newest_first", .boolean, default: true, "Sort kept items newest first, so `items[0]` is the newest."),
            SchemaKey("state", .string, default: "dedupe", "Name the watermarks are stored under (keep it when reordering filters)."),
            SchemaKey(
                "hold",
                .duration,
                default: 30,
                "How long the items of a notification on its way stay held once their daemon stops renewing them (it died; a shared database). "
                    + "Renewed every third of it while the delivery lasts."
            ),
            SchemaKey(
                "forget_after",
                .duration,
                default: 0,
                "Watermarks not moved for this long (users and items that are gone) are removed; an item still there, unchanged, after that long "
                    + "is notified once more. 0 (the default) keeps every watermark."
            ),
        ])
    }

    let configuration: Configuration
    let holdsTaken = DedupeHolds()
    /// Paths parsed once: an OGS check runs this filter for every player, on every item.
    private let itemsPath: JSONPath
    private let timestampPath: JSONPath
    private let itemIdPath: JSONPath?
    private let keyPath: JSONPath?

    init(configuration: Configuration) {
        self.configuration = configuration
        itemsPath = JSONPath(configuration.items)
        timestampPath = JSONPath(configuration.timestamp)
        itemIdPath = configuration.itemId.map(JSONPath.init)
        keyPath = configuration.key.map(JSONPath.init)
    }

    func apply(to event: Event, context: StageContext) async throws -> FilterResult {
        let owner = keyPath.flatMap { event.body.value(at: $0)?.textValue } ?? event.user
        guard let owner else { throw StageError(.invalidEvent, stage: context.stage, "no watermark key: the event names no user") }
        guard let items = event.body.value(at: itemsPath)?.arrayValue else {
            throw StageError(.invalidEvent, stage: context.stage, "'\(configuration.items)' is not a list")
        }
        let keys = items.map { item in itemIdPath.map { "\(owner)/\(item.value(at: $0)?.textValue ?? "")" } ?? owner }
        // A poller emits the same items again at its next check; while their notification is
        // on its way (in backoff, say), here or on another daemon, they must not go out twice.
        // Held before reading the watermarks: a delivery that ended before has committed its
        // watermark already, and none can move it while the hold lasts.
        let store = context.stageState
        let holds = configuration.state
        let candidates = holdsTaken.notHeldHere(Set(keys))
        let claimed = candidates.isEmpty ? [] : try await store.hold(keys: candidates, stage: holds, lease: configuration.hold)
        holdsTaken.took(claimed)
        guard !claimed.isEmpty else { return .drop(reason: "a notification for these items is still being delivered", code: "in_flight") }
        var kept: [(item: JSON, key: String, timestamp: JSON, seconds: Double)] = []
        let watermarks: [String: JSON]
        do {
            // The devices that got an item while another device of the user failed are read
            // with the watermarks: one read, and no row at all in the common case.
            var read: [String] = []
            read.reserveCapacity(claimed.count * 2)
            for key in claimed {
                read.append(key)
                read.append(DeliveredDevices.key(of: key))
            }
            watermarks = try await store.states(stage: holds, keys: read)
            for (item, key) in zip(items, keys) where claimed.contains(key) {
                guard let timestamp = item.value(at: timestampPath), let seconds = timestamp.doubleValue else { continue }
                if let mark = watermarks[key]?.doubleValue, seconds <= mark { continue }
                kept.append((item, key, timestamp, seconds))
            }
        } catch {
            await holdsTaken.release(claimed, store: store, stage: holds)
            throw error
        }
        var newest: [String: (timestamp: JSON, seconds: Double)] = [:]
        for (_, key, timestamp, seconds) in kept where (newest[key]?.seconds ?? -.infinity) < seconds {
            newest[key] = (timestamp, seconds)
        }
        let held = Set(newest.keys)
        await holdsTaken.release(claimed.subtracting(held), store: store, stage: holds)
        guard !kept.isEmpty else { return .drop(reason: "nothing newer than what \(owner) was already notified about", code: "not_newer") }
        if configuration.newestFirst { kept.sort { $0.seconds > $1.seconds } }
        var passed = event
        passed.body = event.body.replacing(at: configuration.items, with: .array(kept.map(\.item)))
        // Kept per device: a device that got the newest item of a key (an earlier check, when
        // another device failed) is not sent it again, while the watermark waits for the others.
        let writes = newest.map { key, newest in
            StateWrite(
                stage: configuration.state,
                key: key,
                value: newest.timestamp,
                onlyForward: true,
                perDevice: DeliveredDevices(watermarks[DeliveredDevices.key(of: key)])?.devices(notifiedOf: newest.seconds) ?? []
            )
        }
        passed.commitOnDelivery += writes
        let skipped = !writes.alreadyDelivered.isEmpty
        let live = context.mode == .live
        // Released once the event's processing ended, after its watermark was committed (or
        // not, when the delivery failed for good: the next check retries the items).
        let previous = passed.onComplete
        let holdsTaken = self.holdsTaken
        passed.onComplete = { report in
            // Every device left had the items already (the one that failed was unregistered):
            // the watermark moves as a delivery's would, instead of the items coming back at
            // every check with nobody to send them to.
            if skipped, live, report.status == .noRecipients {
                try? await uncancelled { try await store.setState(writes) }
            }
            await holdsTaken.release(held, store: store, stage: holds)
            await previous?(report)
        }
        return .pass(passed)
    }

    /// Renews the holds of the notifications on their way and retries the releases the store
    /// refused, every third of `hold`, and once more at stop.
    ///
    /// A watermark is written when its item is notified: one not moved for `forget_after`
    /// belongs to a user or an item that is gone, or to an item unchanged for that long, which
    /// is then notified once more, as a reminder. The filter keeps no clock of its own, so a
    /// pipeline test gives the same answer on any day. Once a minute
    /// after the start, then hourly; any daemon of a group may do it.
    func run(context: StageContext) async throws {
        guard context.mode == .live else { return await untilCancelled() }
        let every = max(configuration.hold, .seconds(1)) / 3
        let clock = context.clock
        var nextForget: Duration? = configuration.forgetAfter > .zero ? clock.elapsed + .seconds(60) : nil
        while !Task.isCancelled {
            if !holdsTaken.isEmpty {
                await holdsTaken.maintain(store: context.stageState, stage: configuration.state, lease: configuration.hold)
            }
            if let due = nextForget, clock.elapsed >= due {
                await forgetOldWatermarks(context: context, now: Date(timeIntervalSince1970: clock.now))
                nextForget = clock.elapsed + .seconds(3600)
            }
            do { try await clock.sleep(for: every) } catch { break }
        }
        // Stopping: the last chance this process has to give its holds back.
        let kept = await holdsTaken.maintain(store: context.stageState, stage: configuration.state, lease: configuration.hold)
        if kept > 0 {
            context.logger.warning("watermarks: \(kept) holds not released at stop; they lapse after \(Int(configuration.hold.inSeconds)) s")
        }
    }

    @discardableResult
    func forgetOldWatermarks(context: StageContext, now: Date) async -> Int {
        let cutoff = now.timeIntervalSince1970 - configuration.forgetAfter.inSeconds
        var removed = 0
        do {
            while !Task.isCancelled {
                let batch = try await context.retention.pruneStates(stage: configuration.state, unchangedSince: cutoff, limit: 1000)
                removed += batch
                guard batch == 1000 else { break }
            }
        } catch {
            context.logger.warning("watermarks: pruning stopped: \(error)")
        }
        if removed > 0 {
            context.logger.info("watermarks: removed \(removed) not moved for \(Int(configuration.forgetAfter.inSeconds / 86400)) days")
        }
        return removed
    }
}
