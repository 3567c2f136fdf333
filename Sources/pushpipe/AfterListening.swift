import ServiceLifecycle

/// Runs a service (the pipelines) only once every listener of the daemon listens. Pipelines
/// claim queued events, poll schedules and webhook batches as they start, and a daemon that
/// cannot bind (its port taken, most often by a daemon already running) must exit having
/// claimed nothing: a claim it made would hold another daemon's work, or send it twice.
/// It returns in its turn of the group's stop, not when the pipelines finished draining.
struct AfterListening: Service {
    /// How many listeners report on `listening` (each once, when it bound).
    let listeners: Int
    let listening: AsyncStream<Void>
    let service: any Service
    /// Runs beside the service once every listener listens (it tells systemd when the
    /// pipelines started); ended when the service ends.
    var whileRunning: @Sendable () async -> Void = {}

    func run() async throws {
        var bound = 0
        // Ends early when the group is cancelled (a listener failed to bind) or stops: then the
        // service never ran.
        for await _ in listening.cancelOnGracefulShutdown() {
            bound += 1
            if bound == listeners { break }
        }
        guard bound == listeners, !Task.isCancelled else { return }
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await whileRunning() }
            try await service.run()
            group.cancelAll()
        }
        // The pipelines end as soon as a stop begins (`StopIntakeFirst`), before the listeners
        // after them in the group stopped; a service that returns before its turn in the stop
        // fails the group (exit 1), so this one waits for its turn.
        try? await gracefulShutdown()
    }
}
