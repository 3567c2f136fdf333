import Foundation

#if canImport(ActivityKit)
import ActivityKit
#endif

/// Pager2077's Live Activity, shared by the app and its widget extension. pushpipe renders
/// `content-state` with exactly these keys and plain JSON types, so a default `JSONDecoder`
/// (what ActivityKit uses) decodes it; a test in this repository proves it.
public struct PagerActivityAttributes: Codable, Hashable, Sendable {
    public struct ContentState: Codable, Hashable, Sendable {
        public var sender: String
        public var message: String
        /// UNIX seconds (a plain number: no custom date strategy on the app's side).
        public var timestamp: Double
        public var isDemo: Bool
        public var messageIndex: Int
        public var totalMessages: Int

        public init(sender: String, message: String, timestamp: Double, isDemo: Bool, messageIndex: Int, totalMessages: Int) {
            self.sender = sender
            self.message = message
            self.timestamp = timestamp
            self.isDemo = isDemo
            self.messageIndex = messageIndex
            self.totalMessages = totalMessages
        }

        public var date: Date { Date(timeIntervalSince1970: timestamp) }
    }

    /// Who the pager belongs to (static for the activity's life).
    public var recipient: String
    /// The group whose pages the activity shows, when it listens on the group's broadcast
    /// channel (iOS 18); nil for a personal pager. Optional, so activities started before
    /// groups existed still decode.
    public var group: String?

    public init(recipient: String, group: String? = nil) {
        self.recipient = recipient
        self.group = group
    }
}

#if canImport(ActivityKit) && os(iOS)
extension PagerActivityAttributes: ActivityAttributes {}
#endif
