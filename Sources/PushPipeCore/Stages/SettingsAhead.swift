/// A batch's users' settings, read in one go before its filters (`RegistrationStore.settings(of:)`):
/// a filter that reads settings looks up one event's user at a time, which on PostgreSQL was a
/// round trip per event in turn. Users are matched byte for byte, as the stores match them, so
/// a canonically equivalent id is another user, read from the store.
package struct SettingsAhead: Sendable {
    /// How long the read answers: a batch's filters may take long (a plugin, a hold written
    /// per event), and a user who switched notifications off must be obeyed soon after.
    package static let lifetime: Duration = .seconds(1)

    private var byUser: [[UInt8]: [String: JSON]] = [:]
    private let clock: any DaemonClock
    private let readAt: Duration

    /// - Parameter clock: the processor's, on which the read is dated and aged.
    package init(users: [String], settings: [[String: JSON]], clock: any DaemonClock) {
        self.clock = clock
        readAt = clock.elapsed
        for (user, values) in zip(users, settings) { byUser[Array(user.utf8)] = values }
    }

    /// The user's settings as read, or nil when the read does not hold the user or is older
    /// than `lifetime`: the caller reads the store.
    package subscript(user: String) -> [String: JSON]? {
        guard clock.elapsed - readAt < Self.lifetime else { return nil }
        return byUser[Array(user.utf8)]
    }
}
