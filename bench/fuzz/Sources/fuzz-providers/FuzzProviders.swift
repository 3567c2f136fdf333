import Foundation
import FuzzDriver
import PushPipeCore

@testable import PushPipeStages

/// Providers' answers come from the network: APNs', FCM's and, for Web Push, any server a
/// user named. Whatever a status, a `Retry-After` and a body hold, reading them into an
/// outcome never crashes, and the outcome the runtime keeps (`sanitized`) has a finite wait
/// within an hour, a finite `since`, and a reason of at most 200 characters without control
/// characters or NUL; a Web Push reason never repeats the body beyond a short code.
///
/// An input is: a byte choosing the provider, two bytes of status, a byte giving the length of
/// the `Retry-After` text that follows, then the body.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzProviders(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let bytes = Array(UnsafeRawBufferPointer(start: start, count: count))
    guard bytes.count >= 4 else { return 0 }
    let status = Int(UInt16(bytes[1]) << 8 | UInt16(bytes[2])) % 600
    let retryLength = min(Int(bytes[3]), bytes.count - 4)
    let retryText = String(decoding: bytes[4..<(4 + retryLength)], as: UTF8.self)
    let body = Array(bytes[(4 + retryLength)...])
    let outcome: TransportOutcome
    switch bytes[0] % 3 {
    case 0:
        outcome = APNsResponse(status: status, apnsID: "fuzz", body: Data(body)).outcome.0
    case 1:
        // As the FCM transport reads them.
        let json = try? JSON.parse(body)
        outcome = FCMResponse(status: status, body: json, retryAfter: Double(retryText).flatMap { $0.isFinite ? $0 : nil }).outcome.0
    default:
        // As the webpush transport reads them: at most the egress client's 1 KB of body.
        let response = WebPushResponse(
            status: status,
            location: nil,
            retryAfter: Double(retryText),
            code: WebPushResponse.code(in: Array(body.prefix(1024)))
        )
        outcome = response.outcome
        if let reason = outcome.reason, reason.utf8.count > 80 {
            fatalError("a Web Push reason repeats the body: \(reason.debugDescription)")
        }
    }
    check(outcome.sanitized)
    return 0
}

func check(_ outcome: TransportOutcome) {
    if let reason = outcome.reason {
        guard reason.count <= TransportOutcome.longestReason + 1 else { fatalError("reason of \(reason.count) characters") }
        for scalar in reason.unicodeScalars where scalar.value < 0x20 || scalar.value == 0x7F || (0x80..<0xA0).contains(scalar.value) {
            fatalError("control character \(scalar.value) in \(reason.debugDescription)")
        }
    }
    switch outcome {
    case .retryAfter(let seconds?, _):
        guard seconds.isFinite, (0...TransportOutcome.longestRetryHint.inSeconds).contains(seconds) else { fatalError("Retry-After \(seconds)") }
    case .dropToken(_, let since?):
        guard since.isFinite else { fatalError("since \(since)") }
    default:
        break
    }
}

/// SwiftPM's entry point for this executable: libFuzzer's driver, running the target above.
@_cdecl("fuzz_providers_main")
public func fuzzProvidersMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    runFuzzer(argc, argv) { start, size in fuzzProviders(start, size) }
}
