import Foundation

extension EventRecord {
    /// The fields stores keep as one JSON text (UTF-8): the pipeline, id, state and time are
    /// columns of their own (what lookups and listings select on). Written per event, so
    /// straight to bytes.
    public var storedText: [UInt8] {
        var writer = JSONObjectWriter(capacity: 160 + recipients.count * 160)
        writer.add("accepted_at", acceptedAt)
        // The time of the recipients' outcomes unless one says otherwise: the `updated_at`
        // column moves without the text (a replay marks the record accepted).
        writer.add("recorded_at", updatedAt)
        writer.add("source", source)
        writer.add("caller", caller)
        writer.add("user", user)
        writer.add("stage", stage)
        writer.add("code", code)
        writer.add("reason", reason)
        writer.add("trace_id", traceID)
        if !recipients.isEmpty {
            writer.add("recipients", objects: recipients) { recipient, writer in
                writer.add("user", recipient.user)
                writer.add("kind", recipient.tokenKind)
                writer.add("token", recipient.token)
                writer.add("transport", recipient.transport)
                writer.add("outcome", recipient.outcome.rawValue)
                writer.add("provider_id", recipient.providerID)
                writer.add("attempts", recipient.attempts)
                writer.add("reason", recipient.reason)
                writer.add("reason_code", recipient.reasonCode)
                // Most outcomes are as old as the record: their time is left to it.
                if recipient.at != updatedAt { writer.add("at", recipient.at) }
            }
        }
        if omittedRecipients > 0 { writer.add("omitted", omittedRecipients) }
        if let input {
            var fields: [String: JSON] = ["time": .double(input.time), "body": input.body]
            if let audience = input.audience { fields["audience"] = audience.json }
            writer.add("input", json: .object(fields))
        }
        if let broadcast { writer.add("broadcast", json: broadcast.json) }
        if let heldUntil { writer.add("held_until", heldUntil) }
        return writer.finished()
    }

    public init(pipeline: String, eventID: String, state: String, updatedAt: Double, stored: JSON) throws {
        guard let state = State(rawValue: state) else { throw StoredRecordError(eventID: eventID, field: "state") }
        try self.init(stored: stored, pipeline: pipeline, eventID: eventID, state: state, updatedAt: updatedAt)
        heldUntil = stored["held_until"]?.doubleValue
    }

    private init(stored: JSON, pipeline: String, eventID: String, state: State, updatedAt: Double) throws {
        self.init(
            pipeline: pipeline,
            eventID: eventID,
            state: state,
            source: stored["source"]?.stringValue,
            caller: stored["caller"]?.stringValue,
            user: stored["user"]?.stringValue,
            stage: stored["stage"]?.stringValue,
            code: stored["code"]?.stringValue,
            reason: stored["reason"]?.stringValue,
            recipients: try (stored["recipients"]?.arrayValue ?? []).map {
                try Delivery(stored: $0, eventID: eventID, recordedAt: stored["recorded_at"]?.doubleValue ?? updatedAt)
            },
            omittedRecipients: Int(stored["omitted"]?.intValue ?? 0),
            traceID: stored["trace_id"]?.stringValue,
            acceptedAt: stored["accepted_at"]?.doubleValue ?? updatedAt,
            updatedAt: updatedAt,
            input: stored["input"].flatMap { input in
                input["time"]?.doubleValue.map { Input(time: $0, body: input["body"] ?? .null, audience: Audience(json: input["audience"])) }
            },
            broadcast: stored["broadcast"].flatMap(BroadcastProgress.init(json:))
        )
    }

    /// As callers see it (the status route, `pushpipe events show`): tokens masked, times in
    /// ISO 8601, no input and no caller.
    public var statusJSON: JSON {
        var fields: [String: JSON] = [
            "id": .string(eventID), "pipeline": .string(pipeline), "state": .string(state.rawValue),
            "accepted_at": .string(Self.timestamp(acceptedAt)), "updated_at": .string(Self.timestamp(updatedAt)),
            "recipients": .array(recipients.map(\.statusJSON)),
        ]
        addDescription(to: &fields)
        if omittedRecipients > 0 { fields["omitted_recipients"] = .int(Int64(omittedRecipients)) }
        fields["held_until"] = heldUntil.map { .string(Self.timestamp($0)) }
        // Where a broadcast is, or where it stopped: a replay goes on after `reached_user`.
        if let broadcast {
            var progress: [String: JSON] = ["deliveries": .int(Int64(broadcast.deliveries))]
            progress["after_user"] = broadcast.after.map(JSON.string)
            progress["reached_user"] = broadcast.reached.map(JSON.string)
            progress["reached_all"] = .bool(broadcast.reachedAll)
            fields["broadcast"] = .object(progress)
        }
        return .object(fields)
    }

    /// The fields both forms share, each only when known.
    private func addDescription(to fields: inout [String: JSON]) {
        fields["source"] = source.map(JSON.string)
        fields["user"] = user.map(JSON.string)
        fields["stage"] = stage.map(JSON.string)
        fields["code"] = code.map(JSON.string)
        fields["reason"] = reason.map(JSON.string)
        fields["trace_id"] = traceID.map(JSON.string)
    }

    public static func timestamp(_ seconds: Double) -> String {
        Date(timeIntervalSince1970: seconds).formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
    }
}

extension Delivery {
    init(stored: JSON, eventID: String, recordedAt: Double) throws {
        guard let user = stored["user"]?.stringValue, let kind = stored["kind"]?.stringValue, let token = stored["token"]?.stringValue,
            let outcome = stored["outcome"]?.stringValue.flatMap(DeliveryOutcome.init(rawValue:))
        else { throw StoredRecordError(eventID: eventID, field: "recipients") }
        self.init(
            user: user,
            tokenKind: kind,
            token: token,
            transport: stored["transport"]?.stringValue ?? "",
            outcome: outcome,
            providerID: stored["provider_id"]?.stringValue,
            attempts: Int(stored["attempts"]?.intValue ?? 0),
            reason: stored["reason"]?.stringValue,
            reasonCode: stored["reason_code"]?.stringValue,
            at: stored["at"]?.doubleValue ?? recordedAt
        )
    }

    var statusJSON: JSON {
        var fields: [String: JSON] = [
            "user": .string(user), "token": .string(TokenMask.mask(token)), "token_kind": .string(tokenKind),
            "transport": .string(transport), "outcome": .string(outcome.rawValue), "attempts": .int(Int64(attempts)),
            "at": .string(EventRecord.timestamp(at)),
        ]
        fields["provider_id"] = providerID.map(JSON.string)
        fields["reason"] = reason.map(JSON.string)
        fields["reason_code"] = reasonCode.map(JSON.string)
        return .object(fields)
    }
}

/// A record row the store cannot read back (written by a newer version, or damaged).
public struct StoredRecordError: Error, CustomStringConvertible {
    public var eventID: String
    public var field: String

    public var description: String { "the stored record of event \(eventID) has no readable '\(field)'" }
}
