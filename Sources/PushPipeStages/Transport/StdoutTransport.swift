import Foundation
import PushPipeCore

/// Prints each notification instead of sending it: for trying pipelines locally and for
/// pipelines whose consumer reads pushpipe's output.
struct StdoutTransport: Transport {
    static let summary = "Prints each notification as JSON on standard output; always delivered."

    struct Configuration: StageConfiguration {
        var format: String
        static let schema = Schema([
            SchemaKey("format", .oneOf(["pretty", "compact"]), default: "pretty", "How the JSON is printed.")
        ])
    }

    let configuration: Configuration

    func prepare(_ notification: RenderedNotification, context: StageContext) throws -> OutgoingRequest {
        let headers = notification.options.sorted { $0.key < $1.key }.map { (name: $0.key, value: $0.value.textValue ?? "") }
        return OutgoingRequest(
            url: "stdout://\(context.pipeline)/\(notification.token.kind)/\(notification.token.value)",
            headers: headers,
            sending: notification
        )
    }

    func send(_ request: OutgoingRequest, context: StageContext) async -> TransportOutcome {
        let body = configuration.format == "pretty" ? request.body.prettyText : request.body.compactText
        context.output.print("[\(context.pipeline)] to \(request.token.kind) \(request.token.masked) of \(request.token.user): \(body)")
        return .delivered(providerID: RandomIdentifier.uuid())
    }
}
