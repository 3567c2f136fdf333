import Foundation

extension PipelineSupervisor {
    /// What keeps the daemon from being ready, by component; empty when it is ready.
    /// The store must answer, every pipeline must run, and in a live daemon every transport
    /// must have loaded its credentials.
    public func readinessProblems(storeTimeout: Duration = .seconds(2)) async -> [String: String] {
        var problems: [String: String] = [:]
        if let storeProblem = await Self.storeProblem(store, timeout: storeTimeout) { problems["store"] = storeProblem }
        guard hasAppliedConfiguration else {
            problems["pipelines"] = "starting"
            return problems
        }
        for runner in runners {
            let name = runner.definition.name
            if !runner.isRunning { problems["pipeline \(name)"] = "not running (starting or stopping)" }
            if let transport = runner.definition.transport.stage as? any ReadinessReporting, let reason = transport.notReadyReason {
                problems["pipeline \(name) transport"] = reason
            }
        }
        return problems
    }

    static func storeProblem(_ store: any Store, timeout: Duration) async -> String? {
        // nil: no answer in time; .some(nil): the store answered.
        let answer: String?? = await withinTimeout(timeout) { () async -> String? in
            do {
                try await store.ping()
                return nil
            } catch {
                return "does not answer: \(error)"
            }
        }
        return answer ?? "no answer within \(timeout)"
    }

    /// The gauges read from the store (dead letters, held events), set before a scrape reads
    /// them: left as they were when the store does not answer within `timeout`, so a scrape
    /// never hangs on it.
    public func refreshStoredGauges(timeout: Duration = .seconds(1)) async {
        if let counts = await Self.withinTimeout(timeout, { try await self.store.deadLetterCounts() }) {
            for runner in runners {
                let pipeline = runner.definition.name
                telemetry.set(.deadLetters, [("pipeline", pipeline)], to: counts[pipeline] ?? 0)
            }
        }
        if let queued = await Self.withinTimeout(timeout, { try await self.store.queuedEventCounts() }) {
            let held = Dictionary(queued.filter { $0.source == QueuedEventIntake.heldKey }.map { ($0.pipeline, $0.count) }) { $0 + $1 }
            for runner in runners {
                let pipeline = runner.definition.name
                telemetry.set(.eventsHeld, [("pipeline", pipeline)], to: held[pipeline] ?? 0)
            }
        }
    }

    /// The newest dead letters of the running pipelines (the status page), none when the store
    /// does not answer in time.
    public func latestDeadLetters(limit: Int, timeout: Duration = .seconds(1)) async -> [EventRecord] {
        let names = Set(runners.map(\.definition.name))
        let letters = await Self.withinTimeout(timeout, { try await self.store.deadLetters(pipeline: nil, since: nil, limit: limit) }) ?? []
        return letters.filter { names.contains($0.pipeline) }
    }

    /// `body`'s result, or nil when it fails or takes longer than `timeout`.
    static func withinTimeout<Result: Sendable>(_ timeout: Duration, _ body: @escaping @Sendable () async throws -> Result) async -> Result? {
        await withTaskGroup(of: Result?.self) { group in
            group.addTask { try? await body() }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
    }

    /// The gauges that describe the present (queue depth, events in flight, provider
    /// connections), set just before a scrape reads them.
    public func refreshGauges() {
        for runner in runners {
            let pipeline = runner.definition.name
            telemetry.set(.eventsQueued, [("pipeline", pipeline)], to: runner.queued)
            telemetry.set(.eventsInFlight, [("pipeline", pipeline)], to: runner.processing)
            if let transport = runner.definition.configuredTransport as? any ConnectionReporting {
                telemetry.set(
                    .providerConnections,
                    [("pipeline", pipeline), ("transport", runner.definition.transport.type)],
                    to: transport.openConnections
                )
            }
        }
    }
}
