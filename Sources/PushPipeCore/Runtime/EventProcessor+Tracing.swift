import Tracing

extension EventProcessor {
    /// A delivery attempt's span, under its event's; nil when the event is not traced. The
    /// token is masked, as in logs: a trace backend is no place for credentials.
    func attemptSpan(_ event: Event, _ notification: RenderedNotification, attempt: Int) -> (any Span)? {
        guard let trace = event.trace else { return nil }
        let span = trace.child(spanNames?.send ?? definition.transport.id, kind: .client)
        span.attributes["pushpipe.transport"] = definition.transport.type
        span.attributes["pushpipe.token"] = notification.token.masked
        span.attributes["pushpipe.token.kind"] = notification.token.kind
        span.attributes["pushpipe.user"] = notification.token.user
        span.attributes["pushpipe.attempt"] = attempt
        return span
    }

    /// Ends an attempt's span with the transport's answer.
    static func end(_ span: (any Span)?, _ outcome: TransportOutcome) {
        guard let span else { return }
        span.attributes["pushpipe.outcome"] = outcome.outcome.rawValue
        if case .delivered(let providerID) = outcome {
            if let providerID { span.attributes["pushpipe.provider_id"] = providerID }
        } else {
            span.setStatus(SpanStatus(code: .error, message: outcome.reason))
        }
        if let reason = outcome.reason { span.attributes["pushpipe.reason"] = reason }
        span.end()
    }
}
