/// Turns an event into platform payloads, one per recipient token.
///
/// The renderer chooses the tokens because the choice is part of the payload's meaning:
/// a Live Activity start goes to a push-to-start token, an alert to a device token.
public protocol Renderer: Sendable {
    func render(_ event: Event, context: StageContext) async throws -> [RenderedNotification]
}
