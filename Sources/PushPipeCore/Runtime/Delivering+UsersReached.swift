extension Delivering {
    /// Keeps the notifications of the users a stopped page reached: `users` in page order, up
    /// to the first one with a notification not sent (a user's devices are recorded together,
    /// so one with a device left out is sent to again in full). Returns the last user kept,
    /// nil when the page reached no one.
    mutating func keepUsersReached(in users: [String]) -> String? {
        var unsent: Set<String> = []
        for (notification, attempt) in zip(notifications, attempts) where !attempt.wasMade {
            unsent.insert(notification.token.user)
        }
        guard !unsent.isEmpty else { return users.last }
        let reached = users.prefix { !unsent.contains($0) }
        guard let last = reached.last else {
            notifications = []
            attempts = []
            return nil
        }
        let kept = Set(reached)
        let keeping = notifications.indices.filter { kept.contains(notifications[$0].token.user) }
        notifications = keeping.map { notifications[$0] }
        attempts = keeping.map { attempts[$0] }
        return last
    }
}

extension Delivering.Attempt {
    /// Sent at least once, or settled without a send (refused, a dry run): not left waiting.
    var wasMade: Bool { count > 0 || request == nil || metricOutcome != nil }
}
