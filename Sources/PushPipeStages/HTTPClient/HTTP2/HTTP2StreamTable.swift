import NIOHTTP2

/// A connection's open streams by id: a table of fixed size, at least twice the streams that
/// may be open, with linear probing.
///
/// Why not a `Dictionary`: a request looks its stream up about six times (opened, answered,
/// each frame of the answer, closed, its deadline passed over) and each lookup would hash the id
/// with SipHash, on the event loop every answer waits for. Ids go up by two from one stream
/// to the next, so consecutive streams take consecutive slots and a
/// lookup is an index computation; an old stream still open (slow to answer) only makes the
/// next ids probe one slot further. The size is fixed by `maximumOpenStreams`, so memory does
/// not grow with what a stuck stream holds up.
struct HTTP2StreamTable<Value> {
    /// 0 marks an empty slot: stream 0 is the connection itself, never a request's.
    private var ids: [Int32]
    private var values: [Value?]
    private let mask: Int
    private(set) var count = 0

    init(maximumOpen: Int) {
        var size = 8
        while size < 2 * maximumOpen { size *= 2 }
        ids = Array(repeating: 0, count: size)
        values = Array(repeating: nil, count: size)
        mask = size - 1
    }

    var isEmpty: Bool { count == 0 }

    private func home(_ id: Int32) -> Int { Int(id >> 1) & mask }

    private func slot(of id: HTTP2StreamID) -> Int? {
        let id = Int32(id)
        var index = home(id)
        while ids[index] != 0 {
            if ids[index] == id { return index }
            index = (index + 1) & mask
        }
        return nil
    }

    func contains(_ id: HTTP2StreamID) -> Bool { slot(of: id) != nil }

    /// The caller keeps the count at most `maximumOpen`, so an empty slot is always found.
    mutating func insert(_ value: Value, for id: HTTP2StreamID) {
        precondition(2 * (count + 1) <= ids.count, "more open streams than the table was made for")
        let raw = Int32(id)
        var index = home(raw)
        while ids[index] != 0 { index = (index + 1) & mask }
        ids[index] = raw
        values[index] = value
        count += 1
    }

    /// Changes the stream's value in place; nothing when the stream is not open.
    mutating func update(_ id: HTTP2StreamID, _ change: (inout Value) -> Void) {
        guard let index = slot(of: id) else { return }
        change(&values[index]!)
    }

    mutating func removeValue(for id: HTTP2StreamID) -> Value? {
        guard var hole = slot(of: id) else { return nil }
        // Moved out (`take`), not copied: a copy and the release of the slot's value cost a
        // reference count per field of every stream.
        let removed = values[hole].take()
        ids[hole] = 0
        count -= 1
        // Backward-shift deletion: entries after the hole that probed past it move back, so
        // every entry stays reachable from its home slot without tombstones.
        var next = (hole + 1) & mask
        while ids[next] != 0 {
            let distanceFromHome = (next - home(ids[next])) & mask
            let distanceToHole = (next - hole) & mask
            if distanceFromHome >= distanceToHole {
                ids[hole] = ids[next]
                values[hole] = values[next].take()
                ids[next] = 0
                hole = next
            }
            next = (next + 1) & mask
        }
        return removed
    }

    var streamIDs: [HTTP2StreamID] {
        ids.filter { $0 != 0 }.map { HTTP2StreamID($0) }
    }

    /// Empties the table and returns what it held.
    mutating func removeAll() -> [Value] {
        var open: [Value] = []
        for index in ids.indices where ids[index] != 0 {
            ids[index] = 0
            if let value = values[index].take() { open.append(value) }
        }
        count = 0
        return open
    }
}
