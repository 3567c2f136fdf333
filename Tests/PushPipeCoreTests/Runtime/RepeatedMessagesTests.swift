import Testing

@testable import PushPipeCore

@Suite struct RepeatedMessagesTests {
    @Test func theFirstOfAKindIsLoggedAndTheRestOfTheWindowCounted() {
        let messages = RepeatedMessages(window: .seconds(10))
        let start = ContinuousClock.now
        #expect(messages.admit("503 ServiceUnavailable", at: start) == 0)
        #expect(messages.admit("503 ServiceUnavailable", at: start + .seconds(1)) == nil)
        #expect(messages.admit("503 ServiceUnavailable", at: start + .seconds(9)) == nil)
        #expect(messages.admit("cannot connect", at: start + .seconds(9)) == 0, "another kind is logged at once")
        #expect(messages.admit("503 ServiceUnavailable", at: start + .seconds(10)) == 2, "the window is over: logged, standing for two")
        #expect(messages.admit("503 ServiceUnavailable", at: start + .seconds(11)) == nil)
        #expect(messages.summary(2) == " (and 2 more like it in the last 10 s)")
        #expect(messages.summary(0) == "")
    }

    @Test func theTableOfKindsStaysBounded() {
        let messages = RepeatedMessages(window: .seconds(10))
        let now = ContinuousClock.now
        for index in 0..<(RepeatedMessages.capacity + 10) { #expect(messages.admit("reason \(index)", at: now) == 0) }
        // Forgotten kinds are logged again rather than remembered forever.
        #expect(messages.admit("reason 0", at: now) == 0)
    }

    @Test func configurationErrorsAreReportedOnceAndTheirTableStaysBounded() {
        let reported = RepeatedMessages(window: nil)
        #expect(reported.admit("403 TopicDisallowed") != nil)
        #expect(reported.admit("403 TopicDisallowed") == nil)
        for size in 0..<RepeatedMessages.capacity { _ = reported.admit("payload is \(4097 + size) bytes") }
        #expect(reported.admit("403 TopicDisallowed") != nil, "forgotten once the table was full")
    }
}
