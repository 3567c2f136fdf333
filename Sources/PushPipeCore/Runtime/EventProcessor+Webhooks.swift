extension EventProcessor {
    /// What the pipeline's webhooks are told of these events, each webhook what it asked for.
    /// Each outcome's id depends only on the event and what happened, so the same outcome
    /// sent twice (at least once means it may be) is known as one.
    func webhookOutcomes(of records: [EventRecord], at now: Double) -> [WebhookOutcome] {
        guard !definition.webhooks.isEmpty else { return [] }
        return records.flatMap { record in
            Self.outcomes(of: record).flatMap { outcome in
                definition.webhooks.filter { $0.events.contains(outcome.type) }.map {
                    WebhookOutcome(pipeline: definition.name, target: $0.url, outcomeID: outcome.id, payload: outcome.payload, createdAt: now)
                }
            }
        }
    }

    static func outcomes(of record: EventRecord) -> [(type: String, id: String, payload: JSON)] {
        var outcomes: [(String, String, JSON)] = []
        func add(_ type: String, _ id: String, _ fields: [String: JSON]) {
            var payload = fields
            payload["id"] = .string(id)
            payload["type"] = .string(type)
            outcomes.append((type, id, .object(payload)))
        }
        let type: String? =
            switch record.state {
            case .delivered, .partiallyDelivered: "delivered"
            case .failed: "failed"
            case .deadLetter: "dead_letter"
            case .accepted, .processing, .dropped, .scheduled, .deferred, .batched, .throttled, .capped: nil
            }
        if let type { add(type, "\(record.pipeline)/\(record.eventID)/\(type)", ["event": record.statusJSON]) }
        guard record.state != .processing else { return outcomes }
        for recipient in record.recipients where recipient.outcome == .dropToken {
            // The delivery as the status route shows it, with its event.
            var fields = recipient.statusJSON.objectValue ?? [:]
            fields["event_id"] = .string(record.eventID)
            fields["pipeline"] = .string(record.pipeline)
            add("dead_token", "\(record.pipeline)/\(record.eventID)/dead_token/\(recipient.tokenKind):\(StableHash.hex(recipient.token))", fields)
        }
        return outcomes
    }
}
