import ServiceLifecycle
import Synchronization

/// The store as a daemon's service group runs it: first in the group, it is the last told to
/// stop, and closes then, once the pipelines drained. Cancelled instead (a service failed and
/// the group is torn down at once), it leaves the store open, since other services may still be
/// writing: its owner closes it after the group ended (`closeIfOpen`).
public final class StoreService: Service, Sendable {
    public let store: any Store
    private let closed = Mutex(false)

    public init(_ store: any Store) { self.store = store }

    public func run() async throws {
        try await gracefulShutdown()
        try await closeIfOpen()
    }

    /// Closes the store unless it was closed already.
    public func closeIfOpen() async throws {
        guard
            closed.withLock({ closed in
                defer { closed = true }
                return !closed
            })
        else { return }
        try await store.close()
    }
}
