import Foundation
import Synchronization

/// Where dry runs print requests. One lock so concurrent deliveries never interleave lines.
public final class OutputSink: Sendable {
    private let write: Mutex<@Sendable (String) -> Void>

    public init(_ write: @escaping @Sendable (String) -> Void) {
        self.write = Mutex(write)
    }

    public static let standardOutput = OutputSink { text in
        FileHandle.standardOutput.write(Data((text + "\n").utf8))
    }

    public func print(_ text: String) {
        write.withLock { $0(text) }
    }
}
