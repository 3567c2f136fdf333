/// Who a broadcast still sends to: everyone, or, for a replay of its dead letter, the users it
/// never reached and the devices it left unresolved, so that a replay sends nobody the event twice.
/// A run that resumes inside a page sends that page's users up to where its record reached only
/// what the record left unresolved.
struct BroadcastAudience: Sendable {
    /// Users up to this one (in the store's order) were reached before. Nil: nobody was.
    var reached: String?
    /// Every user was reached before (a replay of a broadcast that went through its pages).
    var reachedAll = false
    /// The devices (`kind:token`) whose notification was left unresolved, and their users.
    private(set) var retrying: Set<String> = []
    private(set) var retryingUsers: Set<String> = []
    /// The page a resumed run goes on inside (the first it renders), while it is rendered.
    private var resumedPage: ResumedPage?

    /// Users of the page up to `through` were sent their first attempts; of their devices, only
    /// those the record left unresolved (`unresolved`, `kind:token`) go again.
    private struct ResumedPage: Sendable {
        var through: String
        var unresolved: Set<String>
    }

    /// The audience of `event`: a replay's is what its dead letter left.
    init(of event: Event) {
        guard let record = event.replayOf else { return }
        let unresolved = record.recipients.filter(\.isUnresolved)
        retrying = Set(unresolved.map { $0.tokenKind + ":" + $0.token })
        retryingUsers = Set(unresolved.map(\.user))
        if let progress = record.broadcast {
            // Users of the page it stopped in that it recorded count as reached: their devices
            // left unresolved are among those retried.
            reached = [progress.reached, progress.pageReached].compactMap { $0 }.max()
            reachedAll = progress.reachedAll
        } else {
            // A dead letter from before broadcasts kept their progress: it went through every page
            // unless nothing was attempted (then nothing is left unresolved, and everyone gets it).
            reachedAll = !unresolved.isEmpty
        }
    }

    /// Goes on inside the page a stopped run recorded up to `through` (`pageReached`): of its
    /// users up to there, only the devices `record` left unresolved are sent again.
    mutating func resume(through user: String, record: EventRecord) {
        let unresolved = record.recipients.lazy.filter { $0.isUnresolved && $0.user <= user }.map(\.address)
        resumedPage = ResumedPage(through: user, unresolved: Set(unresolved))
    }

    /// The devices a resumed page sends again, whose earlier outcome its record keeps unresolved.
    var resumedDevices: Set<String> { resumedPage?.unresolved ?? [] }

    /// Past the page it resumed in: the pages after it go to everyone not reached.
    mutating func leaveResumedPage() { resumedPage = nil }

    func wasReached(_ user: String) -> Bool {
        reachedAll || reached.map { user <= $0 } ?? false
    }

    /// Whether the notification goes to `token`: a user never reached, or a device left unresolved.
    func includes(_ token: DeviceToken) -> Bool {
        let address = token.kind + ":" + token.value
        if let resumedPage, token.user <= resumedPage.through { return resumedPage.unresolved.contains(address) }
        return !wasReached(token.user) || retrying.contains(address)
    }

    /// Whether a page of these users may hold anyone to send to (one never reached, or a device
    /// to retry): a page that cannot is not rendered.
    func mayInclude(_ users: ClosedRange<String>) -> Bool {
        resumedPage != nil || !wasReached(users.upperBound) || retryingUsers.contains { users.contains($0) }
    }

    /// Where paging starts: after the users reached already, unless some have a device to retry.
    var start: String? {
        retrying.isEmpty && !reachedAll ? reached : nil
    }
}
