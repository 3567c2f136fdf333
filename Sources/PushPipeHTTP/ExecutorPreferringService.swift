import PushPipeCore
import ServiceLifecycle

/// A service whose task, and every child task it starts (a server's connections), prefers
/// `executor`: how the HTTP servers run their handlers on the loops that read the requests.
struct ExecutorPreferringService<Inner: Service>: Service {
    let inner: Inner
    let executor: any TaskExecutor

    func run() async throws {
        try await withTaskExecutorPreference(executor) { try await inner.run() }
    }
}
