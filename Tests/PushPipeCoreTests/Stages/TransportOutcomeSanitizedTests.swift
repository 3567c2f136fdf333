import PushPipeCore
import Testing

/// What a stage hands the runtime is made safe where it enters: a plugin's reason code becomes
/// a metric label only in the form codes have, and its text is bounded and printable.
@Suite struct TransportOutcomeSanitizedTests {
    @Test(arguments: [
        ("UNREGISTERED", "UNREGISTERED"), ("quota.exceeded-2", "quota.exceeded-2"), ("", "other"), ("two words", "other"),
        ("x\u{0}y", "other"), (String(repeating: "A", count: 49), "other"), ("café", "other"),
    ])
    func aCodeIsKeptOnlyInTheFormCodesHave(_ code: String, _ kept: String) {
        let outcome = TransportOutcome.retryAfter(seconds: .infinity, reason: ProviderReason(code: code, "text\u{0}with NUL", throttlesSender: true))
        let sanitized = outcome.sanitized
        #expect(sanitized.providerReason?.code == kept)
        #expect(sanitized.reason == "text with NUL" && sanitized.providerReason?.throttlesSender == true)
        guard case .retryAfter(let seconds, _) = sanitized else {
            Issue.record("\(sanitized)")
            return
        }
        #expect(seconds == nil, "an infinite Retry-After is none")
    }
}
