import Testing

@testable import PushPipeCore

/// What a broadcast page stopped at the drain timeout counts as reached: only the notifications
/// the stop left unsent cut it. A held one (its origin asked to wait) was reached and stays
/// unresolved: counted as a cut, it dropped every user sent after it from the record, and the
/// next run sent them again.
struct DeliveringUsersReachedTests {
    static let users = ["u1", "u2", "u3", "u4"]

    static func page(_ attempts: [(user: String, Delivering.Attempt)]) -> Delivering {
        let notifications = attempts.map {
            RenderedNotification(token: DeviceToken(user: $0.user, kind: "device", value: "t-\($0.user)"), payload: [:])
        }
        var delivering = Delivering(event: Event(id: "e", pipeline: "p", user: nil, body: [:]), notifications: notifications)
        // Each one prepared, as the transport prepares them before any is sent.
        delivering.attempts = zip(attempts, notifications).map { attempt, notification in
            var attempt = attempt.1
            attempt.request = OutgoingRequest(url: "https://push.example/\(notification.token.value)", headers: [], sending: notification)
            return attempt
        }
        return delivering
    }

    static let sent = Delivering.Attempt(request: nil, outcome: .delivered(providerID: "ok"), count: 1)
    static let held = Delivering.Attempt(request: nil, outcome: .retryAfter(seconds: 30, reason: .other("held")), count: 0)
    static let unsent = Delivering.Attempt(
        request: nil,
        outcome: .retryAfter(seconds: nil, reason: .other("not sent yet")),
        count: 0,
        notSentYet: true
    )

    @Test func aHeldNotificationDoesNotCutThePage() {
        var page = Self.page([("u1", Self.held), ("u2", Self.sent), ("u3", Self.sent), ("u4", Self.unsent)])
        #expect(page.keepUsersReached(in: Self.users) == "u3")
        #expect(page.notifications.map(\.token.user) == ["u1", "u2", "u3"], "the held one is kept, unresolved")
    }

    @Test func aUserWithOneDeviceLeftUnsentIsSentToAgainInFull() {
        var page = Self.page([("u1", Self.sent), ("u2", Self.sent), ("u2", Self.unsent), ("u3", Self.unsent)])
        #expect(page.keepUsersReached(in: Self.users) == "u1")
        #expect(page.notifications.map(\.token.user) == ["u1"])
    }

    @Test func aPageWhoseFirstUserWasNotReachedIsSentAgain() {
        var page = Self.page([("u1", Self.unsent), ("u2", Self.sent)])
        #expect(page.keepUsersReached(in: Self.users) == nil)
    }

    @Test func aPageLeftWholeReachesItsLastUser() {
        var page = Self.page([("u1", Self.sent), ("u3", Self.held)])
        #expect(page.keepUsersReached(in: Self.users) == "u4")
        #expect(page.notifications.count == 2)
    }

    /// A user registered after the page's query is not in its order: unsent, they could be
    /// passed, so the page goes again; sent, their delivery is kept.
    @Test func aUserThePageDidNotListIsNeverPassedUnsent() {
        var unsentUnlisted = Self.page([("u1", Self.sent), ("u2a", Self.unsent), ("u3", Self.sent)])
        #expect(unsentUnlisted.keepUsersReached(in: Self.users) == nil)
        var sentUnlisted = Self.page([("u1", Self.sent), ("u2a", Self.sent), ("u3", Self.unsent)])
        #expect(sentUnlisted.keepUsersReached(in: Self.users) == "u2")
        #expect(sentUnlisted.notifications.map(\.token.user) == ["u1", "u2a"])
    }
}
