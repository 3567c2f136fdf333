/// How far a broadcast got: the cursor of its work item (`WorkQueue+Broadcasts`), shown in its
/// event's record too, written with each page's deliveries (one transaction): a broadcast that
/// stopped (a kill, the drain timeout, a renderer or store error) goes on after its last
/// recorded page, or inside it as far as the record reached, instead of sending every page
/// again, and a replay of its dead letter goes on where it stopped. Users are paged in their order.
public struct BroadcastProgress: Sendable, Equatable {
    /// The last user of the last page this run (the event, or its replay) went through: it
    /// resumes after it. Nil: no page yet.
    public var after: String?
    /// In the page after `after`, every user up to this one was sent its first attempts and the
    /// record keeps what became of each (written while the rest of the page was out): a run
    /// that resumes sends those users only what the record left unresolved. Nil: none yet.
    public var pageReached: String?
    /// Every user up to this one was sent the event at least once, by this run or by the dead
    /// letter it replays, and no user after it was but those up to `pageReached`: a replay
    /// sends to those up to either only where the record left a notification unresolved. Nil:
    /// nobody yet.
    public var reached: String?
    /// Every page went out (of this run, or of the dead letter it replays): a run that resumes
    /// sends nothing again, and a replay sends to the unresolved recipients alone.
    public var reachedAll: Bool
    /// This run's deliveries so far and how many were accepted, so the report of a run that
    /// resumed counts the pages before it.
    public var deliveries: Int
    public var delivered: Int
    /// Why a delivery of an earlier page was left unresolved, if one was.
    public var unresolvedReason: String?

    public init(
        after: String? = nil,
        pageReached: String? = nil,
        reached: String? = nil,
        reachedAll: Bool = false,
        deliveries: Int = 0,
        delivered: Int = 0,
        unresolvedReason: String? = nil
    ) {
        self.after = after
        self.pageReached = pageReached
        self.reached = reached
        self.reachedAll = reachedAll
        self.deliveries = deliveries
        self.delivered = delivered
        self.unresolvedReason = unresolvedReason
    }

    /// As the record keeps it (`broadcast` in its JSON text).
    public var json: JSON {
        var fields: [String: JSON] = ["deliveries": .int(Int64(deliveries)), "delivered": .int(Int64(delivered))]
        fields["after"] = after.map(JSON.string)
        fields["page_reached"] = pageReached.map(JSON.string)
        fields["reached"] = reached.map(JSON.string)
        if reachedAll { fields["reached_all"] = .bool(true) }
        fields["unresolved_reason"] = unresolvedReason.map(JSON.string)
        return .object(fields)
    }

    public init?(json: JSON) {
        guard json.objectValue != nil else { return nil }
        self.init(
            after: json["after"]?.stringValue,
            pageReached: json["page_reached"]?.stringValue,
            reached: json["reached"]?.stringValue,
            reachedAll: json["reached_all"]?.boolValue ?? false,
            deliveries: Int(json["deliveries"]?.intValue ?? 0),
            delivered: Int(json["delivered"]?.intValue ?? 0),
            unresolvedReason: json["unresolved_reason"]?.stringValue
        )
    }
}
