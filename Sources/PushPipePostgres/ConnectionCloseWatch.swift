import PostgresNIO
import PushPipeCore
import Synchronization

/// Tells the statement running on a pooled connection that the connection closed.
///
/// When the server ends a backend (`pg_terminate_backend`, a restart), PostgresNIO closes the
/// connection, and as a rule fails the statement on it; now and then it does not, and the
/// statement would wait for its whole answer bound (`statement_timeout` + 5 s), holding every
/// outcome write of the daemon behind it. The close is watched once per connection (a
/// callback per statement would pile up on a connection that lives for hours).
final class ConnectionCloseWatch: Sendable {
    private struct State {
        var watched: Set<ObjectIdentifier> = []
        /// What to do if the connection closes while a statement runs on it.
        var running: [ObjectIdentifier: @Sendable () -> Void] = [:]
    }

    private let state = Mutex(State())

    /// A statement starts on `connection`; `closed` runs if it closes before `ended`.
    func started(on connection: PostgresConnection, closed: @escaping @Sendable () -> Void) {
        let id = ObjectIdentifier(connection)
        let first = state.withLock { state in
            state.running[id] = closed
            return state.watched.insert(id).inserted
        }
        guard first else { return }
        connection.closeFuture.whenComplete { _ in
            let closed = self.state.withLock { state in
                state.watched.remove(id)
                return state.running.removeValue(forKey: id)
            }
            closed?()
        }
    }

    func ended(on connection: PostgresConnection) {
        _ = state.withLock { $0.running.removeValue(forKey: ObjectIdentifier(connection)) }
    }
}
