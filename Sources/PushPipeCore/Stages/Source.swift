/// Produces events: a poller, a folder watcher, an HTTP route.
///
/// `run` lasts until the task is cancelled (that is how a pipeline stops its sources
/// before draining); `sink.submit` suspends while the pipeline is busy, which is the
/// backpressure that keeps memory bounded.
public protocol Source: Sendable {
    func run(into sink: EventSink, context: StageContext) async throws
    /// Routes this source serves, e.g. the POST route of `http.event`.
    var routes: [RouteDefinition] { get }
    /// Where this source runs, and the pipeline's workers when all its sources name the same
    /// executor and the transport names none (`Transport.preferredExecutor`). A poller whose
    /// HTTP client lives on one event loop names that loop: what it finds is then processed on
    /// the thread that read it, instead of each event waking a thread of Swift's pool and paying
    /// for a context switch.
    var preferredExecutor: (any TaskExecutor)? { get }
}

extension Source {
    public var routes: [RouteDefinition] { [] }
    public var preferredExecutor: (any TaskExecutor)? { nil }
}

/// Stages that hold resources for their whole life (plugin processes, connection pools).
/// The runtime runs them next to the pipeline and cancels them after it drained.
public protocol LongRunningStage: Sendable {
    func run(context: StageContext) async throws
}

/// Returns once the task is cancelled: what a stage whose work happens elsewhere (a route,
/// a plugin's messages, connections made on first use) does while its pipeline runs.
public func untilCancelled() async {
    while !Task.isCancelled { try? await Task.sleep(for: .seconds(3600)) }
}

/// A source that can produce its current events once, without side effects: what
/// `pushpipe dry-run PIPELINE` without `--event` shows (a poller's check, the waiting files).
public protocol OneShotSource: Sendable {
    func eventsOnce(context: StageContext) async throws -> [Event]
}
