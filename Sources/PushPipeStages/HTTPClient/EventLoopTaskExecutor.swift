import NIOCore

/// Runs tasks on one NIO event loop, for tasks that mostly wait on HTTP requests served by a
/// client on that same loop: a response then resumes its task on the thread that read it,
/// instead of waking a thread of Swift's pool for every response.
final class EventLoopTaskExecutor: TaskExecutor {
    let eventLoop: any EventLoop

    init(_ eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        eventLoop.execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
