import PushPipeCore

/// iOS 18 broadcast channels as the renderer sees them: tokens of `broadcast_token_kind`, owned
/// by a group (`apns.channels` stores them), which the `apns` transport sends as broadcasts.
extension APNsLiveActivityRenderer {
    /// The recipient's channel, when the recipient is a group with one. An event without a
    /// recipient is not sent to every group's channel: a broadcast names its group.
    func broadcastChannel(of event: Event, context: StageContext) async throws -> DeviceToken? {
        guard configuration.event != "start", !configuration.broadcastTokenKind.isEmpty, let user = event.user else { return nil }
        return try await context.registrations.tokens(user: user, kind: configuration.broadcastTokenKind).first
    }

    /// The channel a start joins: `input_push_channel_of` names its owner. A group without a
    /// channel yet leaves the start an ordinary one, and the log says so.
    func channelToJoin(_ templates: TemplateContext, event: Event, context: StageContext) async throws -> DeviceToken? {
        guard configuration.event != "update", configuration.event != "end", !configuration.broadcastTokenKind.isEmpty,
            let owner = inputPushChannelOf?.render(templates)?.textValue, !owner.isEmpty,
            // A group paged without a channel yet: nothing to join, and no member to start.
            owner != event.user
        else { return nil }
        let channel = try await context.registrations.tokens(user: owner, kind: configuration.broadcastTokenKind).first
        if channel == nil {
            context.logger.notice("\(owner) has no broadcast channel: the Live Activity for user \(event.user ?? "-") starts without joining one")
        }
        return channel
    }
}
