import NIOCore
import NIOPosix

/// Runs tasks on NIO's event loops: a job runs on the loop that made it ready (`any()` is the
/// current loop when called from one), so a task that mostly waits on channels of these loops
/// (an HTTP server's connection, an HTTP client's request) resumes on the thread that read the
/// bytes instead of waking a thread of Swift's pool for every request, which saves a context
/// switch per request.
/// A single `EventLoop` is a group of one: tasks on it all run on that loop's thread.
public final class EventLoopGroupTaskExecutor: TaskExecutor {
    /// Hummingbird's servers and the shared HTTP clients run on the singleton group.
    public static let singleton = EventLoopGroupTaskExecutor(MultiThreadedEventLoopGroup.singleton)
    let group: any EventLoopGroup

    public init(_ group: any EventLoopGroup) {
        self.group = group
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        group.any().execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
