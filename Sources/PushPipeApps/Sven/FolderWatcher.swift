import Dispatch
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Names of files that became complete in a folder: written and closed (IN_CLOSE_WRITE) or
/// renamed into it (IN_MOVED_TO). Event-driven through inotify — never a polling loop — so a
/// half-written file is never reported.
///
/// The descriptor is read only when the consumer asks for more, so the kernel's queue is the
/// only buffer: a slow pipeline costs no memory here. When that queue overflows
/// (IN_Q_OVERFLOW) names were lost, and `next` says so: the consumer rescans the folder.
final class FolderWatcher: Sendable {
    let directory: String
    private let descriptor: Int32
    private let queue = DispatchQueue(label: "pushpipe.folder-watcher")
    private let waiting = Mutex(Waiting())

    enum Change: Sendable, Equatable {
        /// Files that became complete.
        case files([String])
        /// The kernel dropped events: whatever the folder holds may be new.
        case overflow
        /// Nothing happened before the deadline.
        case idle
    }

    enum WatchError: Error, CustomStringConvertible {
        case unsupported
        case failed(String, Int32)
        var description: String {
            switch self {
            case .unsupported: "folder watching needs inotify (Linux)"
            case .failed(let call, let code): "\(call) failed: \(String(cString: strerror(code)))"
            }
        }
    }

    /// The wait in progress: its read source, or that the task was cancelled before it began.
    private struct Waiting {
        var source: SourceBox?
        var cancelled = false
    }

    /// Dispatch sources are thread-safe; the protocol only lacks the annotation.
    private struct SourceBox: @unchecked Sendable {
        let source: any DispatchSourceRead
    }

    /// Starts watching: changes from now on are kept by the kernel until `next` reads them.
    init(directory: String) throws {
        self.directory = directory
        #if os(Linux)
        let descriptor = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard descriptor >= 0 else { throw WatchError.failed("inotify_init1", errno) }
        let mask = UInt32(IN_CLOSE_WRITE) | UInt32(IN_MOVED_TO)
        guard inotify_add_watch(descriptor, directory, mask) >= 0 else {
            let code = errno
            close(descriptor)
            throw WatchError.failed("inotify_add_watch \(directory)", code)
        }
        self.descriptor = descriptor
        #else
        throw WatchError.unsupported
        #endif
    }

    deinit {
        close(descriptor)
    }

    /// The next changes, waiting for them until `deadline`; nil once the task is cancelled.
    func next(until deadline: ContinuousClock.Instant) async -> Change? {
        while !Task.isCancelled {
            let (names, overflowed) = readAvailable()
            if overflowed { return .overflow }
            if !names.isEmpty { return .files(names) }
            guard ContinuousClock.now < deadline else { return .idle }
            await waitUntilReadable(deadline: deadline)
        }
        return nil
    }

    /// One read source per wait, cancelled after its first event or at the deadline: the
    /// descriptor is level-triggered, so a source left running would fire until it is read.
    private func waitUntilReadable(deadline: ContinuousClock.Instant) async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let box = SourceBox(source: DispatchSource.makeReadSource(fileDescriptor: descriptor, queue: queue))
                let source = box.source
                source.setEventHandler { box.source.cancel() }
                source.setCancelHandler { continuation.resume() }
                let begun = waiting.withLock { waiting -> Bool in
                    guard !waiting.cancelled else { return false }
                    waiting.source = box
                    return true
                }
                source.resume()
                guard begun else { return source.cancel() }
                let delay = ContinuousClock.now.duration(to: deadline)
                let nanoseconds = max(0, delay.components.seconds * 1_000_000_000 + delay.components.attoseconds / 1_000_000_000)
                queue.asyncAfter(deadline: .now() + .nanoseconds(Int(min(nanoseconds, Int64(Int.max))))) { box.source.cancel() }
            }
            waiting.withLock { $0.source = nil }
        } onCancel: {
            let source = waiting.withLock { waiting -> SourceBox? in
                waiting.cancelled = true
                return waiting.source
            }
            source?.source.cancel()
        }
    }

    /// Drains what the kernel has: a sequence of `inotify_event` headers each followed by a name.
    private func readAvailable() -> (names: [String], overflowed: Bool) {
        var names: [String] = []
        var overflowed = false
        #if os(Linux)
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            guard count > 0 else { break }
            var offset = 0
            let headerSize = MemoryLayout<inotify_event>.size
            while offset + headerSize <= count {
                let (length, mask) = buffer.withUnsafeBytes { raw -> (Int, UInt32) in
                    let event = raw.loadUnaligned(fromByteOffset: offset, as: inotify_event.self)
                    return (Int(event.len), event.mask)
                }
                if mask & UInt32(IN_Q_OVERFLOW) != 0 { overflowed = true }
                let nameBytes = buffer[(offset + headerSize)..<min(count, offset + headerSize + length)].prefix { $0 != 0 }
                if mask & UInt32(IN_ISDIR) == 0, let name = String(bytes: nameBytes, encoding: .utf8), !name.isEmpty { names.append(name) }
                offset += headerSize + length
            }
        }
        #endif
        return (names, overflowed)
    }
}
