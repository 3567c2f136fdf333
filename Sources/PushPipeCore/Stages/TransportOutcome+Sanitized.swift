extension TransportOutcome {
    /// The longest wait a provider's `Retry-After` may ask of one notification.
    public static let longestRetryHint: Duration = .seconds(3600)
    /// The most characters of a provider's reason kept: enough to diagnose, too little to
    /// carry an internal server's page out through the status route.
    public static let longestReason = 200

    /// The outcome as the runtime keeps it: a provider's (or a plugin's) numbers finite and in
    /// range, its text without control characters or NUL (which PostgreSQL's `jsonb` refuses)
    /// and cut to `longestReason`. Applied where outcomes enter the runtime, so no stage can
    /// hand it a number that traps or a string a store refuses.
    /// The provider's `Retry-After` as a wait, 0 to `longestRetryHint`; nil when it gave none
    /// (or a number no wait is).
    public var retryHint: Duration? {
        guard case .retryAfter(let seconds?, _) = self, seconds.isFinite else { return nil }
        return .seconds(min(max(seconds, 0), Self.longestRetryHint.inSeconds))
    }

    public var sanitized: TransportOutcome {
        switch self {
        case .delivered(let providerID):
            return .delivered(providerID: providerID.map { Self.sanitize($0, limit: 128) })
        case .retryAfter(let seconds, let reason):
            return .retryAfter(
                seconds: seconds.flatMap { $0.isFinite ? min(max($0, 0), Self.longestRetryHint.inSeconds) : nil },
                reason: Self.sanitize(reason)
            )
        case .dropToken(let reason, let since):
            return .dropToken(
                reason: Self.sanitize(reason),
                since: since.flatMap { $0.isFinite && $0 >= 0 && $0 < 32_503_680_000 ? $0 : nil }
            )
        case .configError(let reason):
            return .configError(reason: Self.sanitize(reason))
        }
    }

    /// A reason's text as `sanitize(_:limit:)` keeps it; its code, a metric label, only in the
    /// form codes have (a plugin's may be anything): else `other`.
    static func sanitize(_ reason: ProviderReason) -> ProviderReason {
        ProviderReason(
            code: ProviderReason.isCode(reason.code) ? reason.code : ProviderReason.otherCode,
            sanitize(reason.text, limit: longestReason),
            throttlesSender: reason.throttlesSender
        )
    }

    /// Printable text only: control characters (NUL included) become spaces, and at most
    /// `limit` characters are kept, the cut marked with an ellipsis.
    public static func sanitize(_ text: String, limit: Int) -> String {
        // The common case, an id or a short code: printable ASCII, nothing to change.
        if text.utf8.count <= limit, text.utf8.allSatisfy({ (0x20..<0x7F).contains($0) }) { return text }
        var clean = ""
        clean.unicodeScalars.reserveCapacity(min(text.unicodeScalars.count, limit + 1))
        var count = 0
        for scalar in text.unicodeScalars {
            if count == limit { return clean + "…" }
            let printable =
                scalar.properties.generalCategory != .control && scalar.properties.generalCategory != .format
                && scalar.properties.generalCategory != .surrogate && scalar.properties.generalCategory != .unassigned
            clean.unicodeScalars.append(printable ? scalar : " ")
            count += 1
        }
        return clean
    }
}
