import PushPipeCore

/// At most `limit` events per user (and per `key_field` value: a thread, a game) in any
/// `period`, in this pipeline, counted by every daemon of a group together: the rest are
/// dropped with the code `throttled`, which their status shows.
struct ThrottleFilter: Filter, LongRunningStage {
    static let summary = "Drops events beyond `limit` per user (and key) in any `period`, across the daemons of a group."

    struct Configuration: StageConfiguration {
        var limit: Int
        @Seconds var period: Duration
        var keyField: String?
        var name: String

        static let schema = Schema([
            .required("limit", .integer, in: 1...1_000_000, "At most this many events per key in a `period`."),
            .required("period", .duration, "The rolling window the limit counts in."),
            SchemaKey("key_field", .string, "A body field: counted per user and value (a thread, a game); per user when omitted."),
            SchemaKey("name", .string, default: "throttle", "What the counts are stored under (keep it when reordering filters)."),
        ])
    }

    let configuration: Configuration
    let marks: RateMarks

    init(configuration: Configuration) {
        self.configuration = configuration
        marks = RateMarks(kind: "throttle:\(configuration.name)", pipeline: nil, rules: [(configuration.limit, configuration.period)])
    }

    func apply(to event: Event, context: StageContext) async throws -> FilterResult {
        // A broadcast counts as one recipient, `*`.
        let value = configuration.keyField.flatMap { event.body.value(at: $0)?.textValue } ?? ""
        guard try await marks.admit(event, group: StoredKey.joined([event.user ?? "*", value]), context: context) else {
            return .drop(reason: "more than \(configuration.limit) in \(Int(configuration.period.inSeconds)) s", code: "throttled", as: .throttled)
        }
        return .pass(event)
    }

    func run(context: StageContext) async throws { await marks.pruneWhileRunning(context: context) }
}
