import Foundation
import Testing

@testable import PushPipeCore

/// The status page's latest deliveries keep the token as it came and mask it when read: no way
/// of reading one shows more than the mask.
@Suite struct RecentActivityTests {
    @Test func aDeliveryShowsItsTokenMaskedHoweverItIsRead() {
        let token = String(repeating: "c0ffee", count: 10) + "9f"
        let activity = RecentActivity()
        let log = activity.log(for: "alerts")
        log.delivery(.init(time: Date(), user: "alice", unmaskedToken: token, outcome: .delivered, reason: nil))
        let deliveries = activity.snapshot("alerts").deliveries
        #expect(deliveries.count == 1)
        #expect(deliveries.first?.token == TokenMask.mask(token))
        #expect(deliveries.first?.token.contains(token) == false)
        for shown in [String(describing: deliveries.first!), String(reflecting: deliveries.first!), dumped(deliveries.first!)] {
            #expect(!shown.contains(String(token.dropFirst(8).prefix(16))), "\(shown)")
        }
    }

    @Test func keepsTheLatestTwentyDeliveries() {
        let activity = RecentActivity()
        let log = activity.log(for: "alerts")
        for index in 0..<25 {
            log.delivery(.init(time: Date(), user: "u\(index)", unmaskedToken: "token-\(index)-abcdef", outcome: .delivered, reason: nil))
        }
        let deliveries = activity.snapshot("alerts").deliveries
        #expect(deliveries.map(\.user) == (5..<25).map { "u\($0)" })
        #expect(activity.snapshot("alerts").totals.delivered == 25)
    }

    private func dumped(_ value: some Any) -> String {
        var text = ""
        dump(value, to: &text)
        return text
    }
}
