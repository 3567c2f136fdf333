import Foundation
import Synchronization

/// Where dry runs print requests. One lock so concurrent deliveries never interleave lines.
public final class OutputSink: Sendable {
    private let write: @Sendable (String) -> Void
    /// Not the closure itself as the mutex's value: that is converted and re-wrapped in
    /// thunks at every access (see `CommitObserver`).
    private let lock = Mutex(())

    public init(_ write: @escaping @Sendable (String) -> Void) {
        self.write = write
    }

    public static let standardOutput = OutputSink { text in
        FileHandle.standardOutput.write(Data((text + "\n").utf8))
    }

    public func print(_ text: String) {
        lock.withLock { _ in write(text) }
    }
}
