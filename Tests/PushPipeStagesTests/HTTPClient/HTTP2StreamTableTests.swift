import NIOHTTP2
import Testing

@testable import PushPipeStages

/// The open streams table must answer exactly as a dictionary would, whatever order streams
/// finish in, and with a stream that never finishes while thousands come and go after it
/// (every later id then probes past its slot, and deletions must keep them all reachable).
@Suite struct HTTP2StreamTableTests {
    /// A fixed sequence (xorshift), so a failure is the same on every run.
    struct Sequence {
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        mutating func next(below bound: Int) -> Int {
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            return Int(state % UInt64(bound))
        }
    }

    func check(_ table: HTTP2StreamTable<Int>, against model: [HTTP2StreamID: Int]) {
        #expect(table.count == model.count)
        #expect(Set(table.streamIDs) == Set(model.keys))
        for (id, value) in model {
            #expect(table.contains(id))
            var found: Int?
            var copy = table
            copy.update(id) { found = $0 }
            #expect(found == value)
        }
    }

    @Test(arguments: [false, true])
    func answersAsADictionaryWouldInAnyOrder(withAStuckStream stuck: Bool) {
        let maximumOpen = 100
        var table = HTTP2StreamTable<Int>(maximumOpen: maximumOpen)
        var model: [HTTP2StreamID: Int] = [:]
        var sequence = Sequence()
        var next: Int32 = 1
        func open() {
            let id = HTTP2StreamID(next)
            table.insert(Int(next), for: id)
            model[id] = Int(next)
            next += 2
        }
        if stuck { open() }
        for round in 0..<20_000 {
            // Open until full, or finish one: the oldest mostly, any of them sometimes.
            if model.count < maximumOpen && sequence.next(below: 3) > 0 {
                open()
            } else {
                let candidates = model.keys.sorted().filter { !stuck || $0 != 1 }
                guard !candidates.isEmpty else { continue }
                let id = sequence.next(below: 4) > 0 ? candidates[0] : candidates[sequence.next(below: candidates.count)]
                #expect(table.removeValue(for: id) == model.removeValue(forKey: id))
                #expect(table.removeValue(for: id) == nil, "removed once")
            }
            if round % 97 == 0 {
                table.update(HTTP2StreamID(next - 2)) { $0 += 1_000_000 }
                if let value = model[HTTP2StreamID(next - 2)] { model[HTTP2StreamID(next - 2)] = value + 1_000_000 }
                check(table, against: model)
            }
        }
        check(table, against: model)
        #expect(!stuck || table.contains(1), "the stuck stream is still found after \(next / 2) others")
        #expect(Set(table.removeAll()) == Set(model.values))
        #expect(table.isEmpty && !table.contains(1))
    }
}
