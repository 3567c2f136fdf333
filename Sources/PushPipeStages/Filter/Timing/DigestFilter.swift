import Foundation
import PushPipeCore

/// Batches a user's events (per `key_field` too: a post, a thread) into one notification: the
/// first opens a digest that closes `window` later (or at its `close_at`-th event), the
/// others join it, and one event carries the digest on: its body gains `digest` (`count`,
/// `items`, `actors`), which the renderer reads ("3 new comments on your post"). The digest
/// is a work item every daemon adds to in one step; closing it takes it away, which one
/// daemon only can do: exactly one digest per window.
struct DigestFilter: Filter {
    static let summary = "Batches each user's events (per key) over a window into one notification that carries them all."

    struct Configuration: StageConfiguration {
        var keyField: String?
        @Seconds var window: Duration
        var closeAt: Int
        var keep: String
        var maxItems: Int
        var actorField: String?
        var name: String

        static let schema = Schema([
            SchemaKey("key_field", .string, "A body field: one digest per user and value (a post, a thread); one per user when omitted."),
            .required("window", .duration, "How long a digest stays open after its first event."),
            SchemaKey("close_at", .integer, default: 0, in: 0...100_000, "Closes early at this many events (0: at the window's end only)."),
            SchemaKey("keep", .oneOf(["first", "last"]), default: "last", "Which events' bodies `digest.items` keeps."),
            SchemaKey("max_items", .integer, default: 10, in: 1...100, "How many bodies `digest.items` keeps."),
            SchemaKey("actor_field", .string, "A body field naming who did it: `digest.actors` lists them, each once (at most 50)."),
            SchemaKey("name", .string, default: "digest", "What open digests are stored under (keep it when reordering filters)."),
        ])
    }

    static let maxActors = 50
    /// Event ids a digest remembers, so an event sent again (a kill before its source removed
    /// it) is not counted twice.
    static let rememberedIDs = 200

    let configuration: Configuration
    var kind: String { "digest:\(configuration.name)" }

    func apply(to event: Event, context: StageContext) async throws -> FilterResult {
        // A digest is one person's: an event for every user passes.
        guard let user = event.user else { return .pass(event) }
        let key = user + "\n" + (configuration.keyField.flatMap { event.body.value(at: $0)?.textValue } ?? "")
        let label = configuration.keyField.map { "\($0) '\(event.body.value(at: $0)?.textValue ?? "")' of user \(user)" } ?? "user \(user)"
        if event.hold(by: context.stage) != nil {
            // The first event, back when its digest closes: it takes the digest and carries it.
            let id = event.id
            guard let digest = try await context.work.takeAway(kind, key: key, if: { $0.payload["opener"]?.stringValue == id }) else {
                // A dry run keeps no digest: the event carries one of itself.
                if context.mode != .live { return .pass(carrying(opened(event, at: context.clock.now), event)) }
                return .drop(reason: "its digest for \(label) went out already, with the event that filled it", code: "digest_closed")
            }
            return .pass(carrying(digest.payload, event))
        }
        let now = context.clock.now
        let opening = opened(event, at: now)
        let digest = try await context.work.accumulate(
            WorkItem(kind: kind, key: key, payload: opening, createdAt: now, group: user),
            { [configuration] stored in Self.adding(event, to: stored, configuration) }
        )
        let opener = digest["opener"]?.stringValue
        let closes = digest["closes_at"]?.doubleValue ?? now
        let hold = { (reason: String) in EventHold(.batched, until: Date(timeIntervalSince1970: closes), reason: reason, code: "digest") }
        if opener == event.id { return .hold(hold("opened the digest for \(label); it closes at \(EventRecord.timestamp(closes))")) }
        let count = Int(digest["count"]?.intValue ?? 1)
        if configuration.closeAt > 0, count >= configuration.closeAt,
            let full = try await context.work.takeAway(kind, key: key, if: { $0.payload["opener"]?.stringValue == opener })
        {
            return .pass(carrying(full.payload, event))
        }
        return .batched(hold("in the digest for \(label), opened by event \(opener ?? "?"); it closes at \(EventRecord.timestamp(closes))"))
    }

    /// A digest of `event` alone, open from `now` for the window.
    func opened(_ event: Event, at now: Double) -> JSON {
        var digest: [String: JSON] = [
            "opener": .string(event.id), "opened_at": .double(now), "closes_at": .double(now + configuration.window.inSeconds),
            "count": 1, "items": [event.body], "ids": [.string(event.id)], "actors": [],
        ]
        if let field = configuration.actorField, let actor = event.body.value(at: field), actor != .null { digest["actors"] = [actor] }
        return .object(digest)
    }

    /// `stored` with `event` in it: counted once, its body kept as `keep` says, its actor listed once.
    static func adding(_ event: Event, to stored: JSON, _ configuration: Configuration) -> JSON {
        guard var digest = stored.objectValue else { return stored }
        var ids = digest["ids"]?.arrayValue ?? []
        guard !ids.contains(.string(event.id)) else { return stored }
        ids.append(.string(event.id))
        digest["ids"] = .array(Array(ids.suffix(rememberedIDs)))
        digest["count"] = .int((digest["count"]?.intValue ?? 0) + 1)
        var items = digest["items"]?.arrayValue ?? []
        if configuration.keep == "last" || items.count < configuration.maxItems { items.append(event.body) }
        digest["items"] = .array(Array(configuration.keep == "last" ? items.suffix(configuration.maxItems) : items.prefix(configuration.maxItems)))
        var actors = digest["actors"]?.arrayValue ?? []
        if let field = configuration.actorField, let actor = event.body.value(at: field), actor != .null, !actors.contains(actor),
            actors.count < maxActors
        {
            actors.append(actor)
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
        return carrier
    }
}
