import Synchronization

/// What the pool reads of a connection without going to its event loop: whether it still
/// takes requests, how many it holds, and how many streams it may have open.
///
/// The pool chooses a connection for every request; asking each connection's event loop would
/// cost a task switch per choice, so the loop and the senders publish these instead.
final class HTTP2ConnectionGauge: Sendable {
    private let goingAwayValue = Atomic(false)
    private let outstandingValue = Atomic(0)
    private let streamLimitValue: Atomic<Int>
    /// The pool's idle handling for this connection; nil for the connections the pool keeps.
    let idleTimeout: Duration?
    let onIdle: @Sendable (HTTP2ConnectionGauge) -> Void

    init(maximumOpenStreams: Int, idleTimeout: Duration? = nil, onIdle: @escaping @Sendable (HTTP2ConnectionGauge) -> Void = { _ in }) {
        streamLimitValue = Atomic(maximumOpenStreams)
        self.idleTimeout = idleTimeout
        self.onIdle = onIdle
    }

    /// Set on GOAWAY, on running out of stream ids, on close and on retirement; never cleared.
    var isGoingAway: Bool { goingAwayValue.load(ordering: .relaxed) }
    func setGoingAway() { goingAwayValue.store(true, ordering: .relaxed) }

    /// Requests handed to the connection and not answered yet (waiting or on a stream).
    var outstanding: Int { outstandingValue.load(ordering: .relaxed) }
    func add(_ count: Int) { outstandingValue.add(count, ordering: .relaxed) }
    func remove(_ count: Int) { outstandingValue.subtract(count, ordering: .relaxed) }

    /// Streams the connection may have open: `max_streams`, or the server's
    /// SETTINGS_MAX_CONCURRENT_STREAMS when that is lower (it changes during a connection's life).
    var streamLimit: Int { streamLimitValue.load(ordering: .relaxed) }
    func setStreamLimit(_ limit: Int) { streamLimitValue.store(limit, ordering: .relaxed) }

    /// Every stream it may open is taken: another request would only wait here.
    var isSaturated: Bool { outstanding >= streamLimit }
}
