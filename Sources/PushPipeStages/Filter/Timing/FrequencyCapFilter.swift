import PushPipeCore

/// How often one person is disturbed, across pipelines: every pipeline with a cap of the same
/// `name` counts into one tally per user, and an event past any of its rules (3 a day and 1
/// every 10 minutes) is dropped with the code `capped`. An event whose `bypass_field` holds one
/// of `bypass_values` (a security alert) is neither capped nor counted.
struct FrequencyCapFilter: Filter, LongRunningStage, SharingState {
    static let summary = "Drops events for users who got enough already, by rules shared across pipelines (3 a day, 1 per 10 minutes)."

    /// The store's pipeline every cap's tallies are kept under: no pipeline can have this name.
    static let sharedPipeline = "~caps"

    struct Configuration: StageConfiguration {
        var rules: [RateRule]
        var name: String
        var bypassField: String?
        var bypassValues: [JSON]

        static let schema = Schema(
            [
                .required("rules", .list(.object(RateRule.schema)), "Every rule must hold: at most `limit` per user in any `period`."),
                SchemaKey("name", .string, default: "default", "Caps of one name, in any pipeline, share their tallies."),
            ] + Bypass.keys("is neither capped nor counted")
        )
    }

    let configuration: Configuration
    let marks: RateMarks

    init(configuration: Configuration) throws {
        guard !configuration.rules.isEmpty else { throw ConfigurationValueError(keyPath: "rules", "no rule given", expected: "at least one rule") }
        self.configuration = configuration
        marks = RateMarks(kind: "cap:\(configuration.name)", pipeline: Self.sharedPipeline, rules: configuration.rules.map { ($0.limit, $0.period) })
    }

    /// Caps of one name keep their marks as long as their longest rule: with other rules, one
    /// pipeline's pruning would cut what another counts, so they must say the same.
    var sharedState: SharedState {
        let rules = configuration.rules.sorted { ($0.period, $0.limit) < ($1.period, $1.limit) }
        return SharedState(
            name: "cap '\(configuration.name)'",
            terms: rules.map { "\($0.limit) per \(Int($0.period.inSeconds)) s" }.joined(separator: ", "),
            keyPath: "rules"
        )
    }

    func apply(to event: Event, context: StageContext) async throws -> FilterResult {
        // A broadcast has no one user to count: caps are per person.
        guard let user = event.user else { return .pass(event) }
        if Bypass.applies(to: event, field: configuration.bypassField, values: configuration.bypassValues) { return .pass(event) }
        guard try await marks.admit(event, group: StoredKey.part(user), context: context) else {
            return .drop(reason: "user \(user) reached the '\(configuration.name)' cap", code: "capped", as: .capped)
        }
        return .pass(event)
    }

    func run(context: StageContext) async throws { await marks.pruneWhileRunning(context: context) }
}
