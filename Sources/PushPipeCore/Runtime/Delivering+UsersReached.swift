extension Delivering {
    /// Keeps the notifications of the users a stopped page reached: `users` in page order, up
    /// to the first one with a notification the drain timeout left unsent (a user's devices are
    /// recorded together, so one with a device left out is sent to again in full). A held
    /// notification was reached: it stays unresolved, for a replay, like any other. Returns the
    /// last user kept, nil when the page reached no one (it is all sent again).
    mutating func keepUsersReached(in users: [String]) -> String? {
        var unsent: Set<String> = []
        for (notification, attempt) in zip(notifications, attempts) where attempt.notSentYet {
            unsent.insert(notification.token.user)
        }
        guard !unsent.isEmpty else { return users.last }
        // A user the page's query did not list (registered since) has no place in its order:
        // left unsent, the whole page goes again rather than risk passing them.
        let listed = Set(users)
        guard unsent.isSubset(of: listed) else { return nil }
        let reached = users.prefix { !unsent.contains($0) }
        guard let last = reached.last else { return nil }
        // Kept: the users reached, and those not listed whose notifications all went out.
        let kept = Set(reached)
        let keeping = notifications.indices.filter { index in
            let user = notifications[index].token.user
            return kept.contains(user) || (!listed.contains(user) && !unsent.contains(user))
        }
        notifications = keeping.map { notifications[$0] }
        attempts = keeping.map { attempts[$0] }
        return last
    }
}

extension Delivering {
    /// The last user, in the order `BroadcastAudience` compares users, up to whom every
    /// notification of the page went out (or was held, or refused), among the page's `users`
    /// and those its notifications name: how far a checkpoint may say the page reached. Nil
    /// while the first user has one not sent yet.
    func lastUserAttempted(listed users: [String]) -> String? {
        var firstUnsent: String?
        for (notification, attempt) in zip(notifications, attempts) where attempt.notSentYet {
            let user = notification.token.user
            if firstUnsent.map({ user < $0 }) ?? true { firstUnsent = user }
        }
        var last: String?
        func consider(_ user: String) {
            guard firstUnsent.map({ user < $0 }) ?? true, last.map({ user > $0 }) ?? true else { return }
            last = user
        }
        for user in users { consider(user) }
        for notification in notifications { consider(notification.token.user) }
        return last
    }

    /// The notifications at `indices` with their attempts: what one write records of a page.
    func part(_ indices: [Int]) -> Delivering {
        Delivering(event: event, notifications: indices.map { notifications[$0] }, attempts: indices.map { attempts[$0] })
    }

    /// What no checkpoint of the page recorded: what the page's own write records.
    var unrecorded: Delivering {
        guard attempts.contains(where: \.recorded) else { return self }
        return part(attempts.indices.filter { !attempts[$0].recorded })
    }
}
