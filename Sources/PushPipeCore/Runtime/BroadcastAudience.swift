/// Who a broadcast still sends to: everyone, or, for a replay of its dead letter, the users it
/// never reached and the devices it left unresolved, so that a replay sends nobody the event twice.
struct BroadcastAudience: Sendable {
    /// Users up to this one (in the store's order) were reached before. Nil: nobody was.
    var reached: String?
    /// Every user was reached before (a replay of a broadcast that went through its pages).
    var reachedAll = false
    /// The devices (`kind:token`) whose notification was left unresolved, and their users.
    private(set) var retrying: Set<String> = []
    private(set) var retryingUsers: Set<String> = []

    /// The audience of `event`: a replay's is what its dead letter left.
    init(of event: Event) {
        guard let record = event.replayOf else { return }
        let unresolved = record.recipients.filter(\.isUnresolved)
        retrying = Set(unresolved.map { $0.tokenKind + ":" + $0.token })
        retryingUsers = Set(unresolved.map(\.user))
        if let progress = record.broadcast {
            reached = progress.reached
            reachedAll = progress.reachedAll
        } else {
            // A dead letter from before broadcasts kept their progress: it went through every page
            // unless nothing was attempted (then nothing is left unresolved, and everyone gets it).
            reachedAll = !unresolved.isEmpty
        }
    }

    func wasReached(_ user: String) -> Bool {
        reachedAll || reached.map { user <= $0 } ?? false
    }

    /// Whether the notification goes to `token`: a user never reached, or a device left unresolved.
    func includes(_ token: DeviceToken) -> Bool {
        !wasReached(token.user) || retrying.contains(token.kind + ":" + token.value)
    }

    /// Whether a page of these users may hold anyone to send to (one never reached, or a device
    /// to retry): a page that cannot is not rendered.
    func mayInclude(_ users: ClosedRange<String>) -> Bool {
        !wasReached(users.upperBound) || retryingUsers.contains { users.contains($0) }
    }

    /// Where paging starts: after the users reached already, unless some have a device to retry.
    var start: String? {
        retrying.isEmpty && !reachedAll ? reached : nil
    }
}
