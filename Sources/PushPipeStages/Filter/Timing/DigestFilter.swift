import Foundation
import PushPipeCore

/// Batches a user's events (per `key_field` too: a post, a thread) into one notification: the
/// first opens a digest that closes `window` later (or at its `close_at`-th event), the
/// others join it, and one event carries the digest on: its body gains `digest` (`count`,
/// `items`, `actors`), which the renderer reads ("3 new comments on your post").
///
/// With `max_window` the window slides: each event moves the close to `window` after it, never
/// past `max_window` after the first. With `look_back` an event after a quiet spell goes at
/// once; only one that follows another within `look_back` opens a digest.
///
/// A user and key have one row in the store (`WorkQueue.accumulate`, one step for every
/// daemon): the digest open now (`current`) and those being carried (`closing`, by carrier).
/// Closing moves the open digest to its carrier's name rather than deleting it, so a carrier
/// killed on its way, or held again by a later filter, finds it again; it is removed once
/// the carrier's outcome is final. A digest whose first event never came back (dropped by a
/// filter before it) is taken over by the next event a minute after its end: nothing in it is
/// lost, and no digest stays open for ever.
struct DigestFilter: Filter, LongRunningStage {
    static let summary = "Batches each user's events (per key) over a window into one notification that carries them all."

    struct Configuration: StageConfiguration {
        var keyField: String?
        @Seconds var window: Duration
        @Seconds var maxWindow: Duration
        @Seconds var lookBack: Duration
        var closeAt: Int
        var keep: String
        var maxItems: Int
        var actorField: String?
        var name: String

        static let schema = Schema([
            SchemaKey("key_field", .string, "A body field: one digest per user and value (a post, a thread); one per user when omitted."),
            .required("window", .duration, "How long a digest stays open after its first event (after its last, with `max_window`)."),
            SchemaKey(
                "max_window",
                .duration,
                default: 0,
                "A sliding window: each event keeps the digest open `window` longer, up to this long after its first; 0: fixed."
            ),
            SchemaKey(
                "look_back",
                .duration,
                default: 0,
                "An event with none before it in this long is sent at once; only one that follows another opens a digest. 0: every event is batched."
            ),
            SchemaKey("close_at", .integer, default: 0, in: 0...100_000, "Closes early at this many events (0: at the window's end only)."),
            SchemaKey("keep", .oneOf(["first", "last"]), default: "last", "Which events' bodies `digest.items` keeps."),
            SchemaKey(
                "max_items",
                .integer,
                default: 10,
                in: 1...100,
                "How many bodies `digest.items` keeps (each up to 8 KB; a larger one as `{}`)."
            ),
            SchemaKey("actor_field", .string, "A body field naming who did it (a text): `digest.actors` lists them, each once (at most 50)."),
            SchemaKey("name", .string, default: "digest", "What open digests are stored under (keep it when reordering filters)."),
        ])
    }

    static let maxActors = 50
    static let maxItemBytes = 8192
    /// Event ids a digest remembers, so an event sent again (a kill before its source removed
    /// it) is not counted twice.
    static let rememberedIDs = 200
    /// How long after its end a digest waits for its first event to come back and carry it.
    static let grace = 60.0

    let configuration: Configuration
    /// The events seen in the last `look_back` (one per key, `RateMarks`); nil without one.
    let recent: RateMarks?

    init(configuration: Configuration) throws {
        guard configuration.maxWindow == .zero || configuration.maxWindow >= configuration.window else {
            throw ConfigurationValueError(keyPath: "max_window", "shorter than `window`", expected: "0 (a fixed window), or at least `window`")
        }
        self.configuration = configuration
        recent =
            configuration.lookBack > .zero
            ? RateMarks(kind: "digest-seen:\(configuration.name)", pipeline: nil, rules: [(1, configuration.lookBack)]) : nil
    }

    func run(context: StageContext) async throws {
        guard let recent else { return await untilCancelled() }
        await recent.pruneWhileRunning(context: context)
    }

    var kind: String { "digest:\(configuration.name)" }
    var holder: String { "timing.digest:\(configuration.name)" }

    func apply(to event: Event, context: StageContext) async throws -> FilterResult {
        // A digest is one person's: an event for every user passes.
        guard let user = event.user else { return .pass(event) }
        let value = configuration.keyField.flatMap { event.body.value(at: $0)?.textValue } ?? ""
        let key = StoredKey.joined([user, value])
        let label = configuration.keyField.map { "\($0) '\(value.prefix(64))'" } ?? "the user"
        let now = context.clock.now
        let id = event.id
        if event.hold(by: holder) != nil {
            // The first event, back when its digest closes: it carries the digest, or, sent
            // again, the digest it carried already.
            // Whether it slides is the digest's own (stored when it opened), whatever a reload says.
            let row = try await update(key, now: now, context: context) { row in
                var row = row
                // A sliding window that moved on: not yet.
                let sliding = row.current?["latest"] != nil
                if row.current?["opener"]?.stringValue == id, !sliding || (row.current?["closes_at"]?.doubleValue ?? now) <= now {
                    row.closing[id] = row.current
                    row.current = nil
                }
                return row
            }
            if let current = row.current, current["latest"] != nil, current["opener"]?.stringValue == id,
                let closes = current["closes_at"]?.doubleValue, closes > now
            {
                let reason = "opened the digest for \(label); more came, so it closes later"
                return .hold(EventHold(.batched, until: Date(timeIntervalSince1970: closes), reason: reason, code: "digest", holder: holder))
            }
            guard let digest = row.closing[id] else {
                // A dry run keeps no digest: the event carries one of itself.
                if context.mode != .live { return .pass(carrying(opened(event, at: now), event)) }
                return .drop(reason: "its digest for \(label) went out with another event", code: "digest_closed")
            }
            return .pass(carrier(digest, event, key: key, context: context))
        }
        if let recent {
            // Nothing open, and nothing else in the last `look_back`: it goes at once.
            if try await update(key, now: now, context: context, { $0 }).current == nil, try await recent.admit(event, group: key, context: context) {
                return .pass(event)
            }
            try await recent.note(event, group: key, context: context)
        }
        let row = try await update(key, now: now, context: context, opening: event) { [configuration] row in
            var row = row
            var digest = row.current ?? opened(event, at: now)
            if digest["ids"]?.arrayValue?.contains(.string(id)) != true, var fields = digest.objectValue {
                if now > (fields["closes_at"]?.doubleValue ?? now) + Self.grace {
                    // Its first event never came back: this one opens it again, with all it holds.
                    (fields["slide"], fields["latest"]) = (nil, nil)
                    fields.merge(Self.opening(id, at: now, configuration)) { _, new in new }
                } else if let slide = fields["slide"]?.doubleValue, let latest = fields["latest"]?.doubleValue {
                    // Sliding, by the terms it opened with: `window` after this event, up to `max_window` after the first.
                    let slid = min(now + slide, latest)
                    fields["closes_at"] = .double(max(fields["closes_at"]?.doubleValue ?? slid, slid))
                }
                digest = Self.adding(event, to: .object(fields), configuration)
            }
            if configuration.closeAt > 0, (digest["count"]?.intValue ?? 0) >= Int64(configuration.closeAt) {
                row.closing[id] = digest
                row.current = nil
                return row
            }
            row.current = digest
            return row
        }
        if let full = row.closing[id] { return .pass(carrier(full, event, key: key, context: context)) }
        let digest = row.current ?? [:]
        let closes = Date(timeIntervalSince1970: digest["closes_at"]?.doubleValue ?? now)
        if digest["opener"]?.stringValue == id {
            if context.mode == .live, digest["count"]?.intValue == 1 { context.count(.digestsOpened) }
            return .hold(
                EventHold(.batched, until: closes, reason: "opened the digest for \(label); it closes then", code: "digest", holder: holder)
            )
        }
        return .batched(EventHold(.batched, until: closes, reason: "in the digest for \(label); it closes then", code: "digest", holder: holder))
    }

    /// The row of `key` after `change`, stored in one step for every daemon (`opening` the row
    /// when there is none); an emptied row is removed.
    private func update(
        _ key: String,
        now: Double,
        context: StageContext,
        opening event: Event? = nil,
        _ change: @escaping @Sendable (DigestRow) -> DigestRow
    ) async throws -> DigestRow {
        let initial = change(DigestRow(.object([:])))
        let stored = try await context.work.accumulate(
            WorkItem(kind: kind, key: key, payload: initial.json, createdAt: now),
            { change(DigestRow($0)).json }
        )
        let row = DigestRow(stored)
        if row.isEmpty, context.mode == .live { _ = try await context.work.takeAway(kind, key: key, if: { DigestRow($0.payload).isEmpty }) }
        return row
    }

    /// `event` carrying `digest`; once its outcome is final, the digest is gone from the store.
    private func carrier(_ digest: JSON, _ event: Event, key: String, context: StageContext) -> Event {
        var carrier = carrying(digest, event)
        guard context.mode == .live else { return carrier }
        context.count(.digestsClosed)
        let earlier = event.onComplete
        let id = event.id
        carrier.onComplete = { [self] report in
            if !report.status.isHeld {
                _ = try? await update(key, now: context.clock.now, context: context) { row in
                    var row = row
                    row.closing[id] = nil
                    return row
                }
            }
            await earlier?(report)
        }
        return carrier
    }

    /// A digest of `event` alone, open from `now` for the window.
    func opened(_ event: Event, at now: Double) -> JSON {
        var fields = Self.opening(event.id, at: now, configuration)
        fields["count"] = 0
        return Self.adding(event, to: .object(fields), configuration)
    }

    /// What a digest opened by `opener` at `now` keeps of its terms, so that a reload changes
    /// no open window: its close, and, sliding, how long each event keeps it open and its
    /// latest close.
    static func opening(_ opener: String, at now: Double, _ configuration: Configuration) -> [String: JSON] {
        var fields: [String: JSON] = [
            "opener": .string(opener), "opened_at": .double(now), "closes_at": .double(now + configuration.window.inSeconds),
        ]
        if configuration.maxWindow > .zero {
            fields["slide"] = .double(configuration.window.inSeconds)
            fields["latest"] = .double(now + configuration.maxWindow.inSeconds)
        }
        return fields
    }

    /// `digest` with `event` in it: counted once, its body kept as `keep` says (up to 8 KB), its actor listed once.
    static func adding(_ event: Event, to stored: JSON, _ configuration: Configuration) -> JSON {
        guard var digest = stored.objectValue else { return stored }
        var ids = digest["ids"]?.arrayValue ?? []
        guard !ids.contains(.string(event.id)) else { return stored }
        ids.append(.string(event.id))
        let kept = Array(ids.suffix(rememberedIDs))
        digest["ids"] = .array(kept)
        // Who posted each: their records follow the carrier's outcome (`Event.carries`).
        var callers = digest["callers"]?.objectValue ?? [:]
        if let caller = event.caller { callers[event.id] = .string(caller) }
        if callers.count > kept.count { callers = callers.filter { kept.contains(.string($0.key)) } }
        digest["callers"] = .object(callers)
        digest["count"] = .int((digest["count"]?.intValue ?? 0) + 1)
        var items = digest["items"]?.arrayValue ?? []
        let body = event.body.compactText.utf8.count <= maxItemBytes ? event.body : [:]
        if configuration.keep == "last" || items.count < configuration.maxItems { items.append(body) }
        digest["items"] = .array(Array(configuration.keep == "last" ? items.suffix(configuration.maxItems) : items.prefix(configuration.maxItems)))
        var actors = digest["actors"]?.arrayValue ?? []
        if let field = configuration.actorField, let actor = event.body.value(at: field)?.textValue, actor.utf8.count <= 256,
            !actors.contains(.string(actor)), actors.count < maxActors
        {
            actors.append(.string(actor))
        }
        digest["actors"] = .array(actors)
        return .object(digest)
    }

    /// `event` with the digest in its body, as renderers read it.
    func carrying(_ digest: JSON, _ event: Event) -> Event {
        var carrier = event
        var fields: [String: JSON] = [:]
        for name in ["count", "items", "actors", "opened_at", "closes_at"] { fields[name] = digest[name] ?? .null }
        fields["actors_count"] = .int(Int64(digest["actors"]?.arrayValue?.count ?? 0))
        carrier.body = event.body.replacing(at: "digest", with: .object(fields))
        let callers = digest["callers"]?.objectValue ?? [:]
        carrier.carries = (digest["ids"]?.arrayValue ?? []).compactMap { id in
            guard let id = id.stringValue, id != event.id else { return nil }
            return CarriedEvent(id: id, caller: callers[id]?.stringValue)
        }
        return carrier
    }
}

/// A user and key's row: the digest open now, and those on their way with their carriers.
struct DigestRow: Sendable {
    var current: JSON?
    var closing: [String: JSON]

    init(_ json: JSON) {
        current = json["current"].flatMap { $0 == .null ? nil : $0 }
        closing = json["closing"]?.objectValue ?? [:]
    }

    var isEmpty: Bool { current == nil && closing.isEmpty }

    var json: JSON {
        var fields: [String: JSON] = [:]
        if let current { fields["current"] = current }
        if !closing.isEmpty { fields["closing"] = .object(closing) }
        return .object(fields)
    }
}
