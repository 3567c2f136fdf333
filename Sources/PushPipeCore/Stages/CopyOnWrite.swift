/// The fields of a value the pipeline copies at every step (events, rendered notifications,
/// requests: into batches, deliveries, attempts, reports), kept in one shared box and copied
/// only when a shared box is changed. A copy of the value is then a single reference count
/// instead of one per string, array and closure it holds, because Swift's own copies of these
/// structs are a noticeable cost on the APNs path.
///
/// `Sendable` because a box another copy can see is never changed: `update` copies it first.
struct CopyOnWrite<Fields: Sendable>: @unchecked Sendable {
    private final class Box {
        var fields: Fields

        init(_ fields: Fields) {
            self.fields = fields
        }
    }

    private var box: Box

    init(_ fields: Fields) {
        box = Box(fields)
    }

    /// Read in place: one field read does not copy the others. The values' accessors yield
    /// too (`_read`), so `notification.token.value` copies no token: a `get` there copies
    /// the token each time it is read, many times per notification.
    var fields: Fields {
        _read { yield box.fields }
    }

    mutating func update<Result>(_ change: (inout Fields) -> Result) -> Result {
        if !isKnownUniquelyReferenced(&box) { box = Box(box.fields) }
        return change(&box.fields)
    }
}
