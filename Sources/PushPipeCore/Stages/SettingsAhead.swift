/// A batch's users' settings, read in one go before its filters (`RegistrationStore.settings(of:)`):
/// a filter that reads settings looks up one event's user at a time, which on PostgreSQL was a
/// round trip per event in turn. Users are matched byte for byte, as the stores match them, so
/// a canonically equivalent id is another user, read from the store.
package struct SettingsAhead: Sendable {
    private var byUser: [[UInt8]: [String: JSON]] = [:]

    package init(users: [String], settings: [[String: JSON]]) {
        for (user, values) in zip(users, settings) { byUser[Array(user.utf8)] = values }
    }

    package subscript(user: String) -> [String: JSON]? { byUser[Array(user.utf8)] }
}
