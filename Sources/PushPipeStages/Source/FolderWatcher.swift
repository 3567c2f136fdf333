import Dispatch
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Names of files that became complete in a folder: written and closed (IN_CLOSE_WRITE) or
/// renamed into it (IN_MOVED_TO). Event-driven through inotify and a dispatch read source —
/// never a polling loop — so a half-written file is never reported.
struct FolderWatcher: Sendable {
    let directory: String

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

    /// Starts watching; names arrive on the stream until it is cancelled.
    func names() throws -> AsyncStream<String> {
        #if os(Linux)
        let descriptor = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard descriptor >= 0 else { throw WatchError.failed("inotify_init1", errno) }
        let mask = UInt32(IN_CLOSE_WRITE) | UInt32(IN_MOVED_TO)
        guard inotify_add_watch(descriptor, directory, mask) >= 0 else {
            let code = errno
            close(descriptor)
            throw WatchError.failed("inotify_add_watch \(directory)", code)
        }
        let (stream, continuation) = AsyncStream<String>.makeStream()
        let source = DispatchSource.makeReadSource(fileDescriptor: descriptor, queue: DispatchQueue(label: "pushpipe.folder-watcher"))
        source.setEventHandler {
            for name in Self.readEvents(descriptor) { continuation.yield(name) }
        }
        source.setCancelHandler { close(descriptor) }
        let cancellable = DispatchSourceBox(source: source)
        continuation.onTermination = { _ in cancellable.source.cancel() }
        source.resume()
        return stream
        #else
        throw WatchError.unsupported
        #endif
    }

    /// Dispatch sources are thread-safe; the protocol only lacks the annotation.
    struct DispatchSourceBox: @unchecked Sendable {
        let source: any DispatchSourceRead
    }

    #if os(Linux)
    /// Drains the inotify descriptor: a sequence of `inotify_event` headers each followed by a name.
    static func readEvents(_ descriptor: Int32) -> [String] {
        var names: [String] = []
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            guard count > 0 else { break }
            var offset = 0
            let headerSize = MemoryLayout<inotify_event>.size
            while offset + headerSize <= count {
                let (length, isDirectory) = buffer.withUnsafeBytes { raw -> (Int, Bool) in
                    let event = raw.loadUnaligned(fromByteOffset: offset, as: inotify_event.self)
                    return (Int(event.len), event.mask & UInt32(IN_ISDIR) != 0)
                }
                let nameBytes = buffer[(offset + headerSize)..<min(count, offset + headerSize + length)].prefix { $0 != 0 }
                if !isDirectory, let name = String(bytes: nameBytes, encoding: .utf8), !name.isEmpty { names.append(name) }
                offset += headerSize + length
            }
        }
        return names
    }
    #endif
}
