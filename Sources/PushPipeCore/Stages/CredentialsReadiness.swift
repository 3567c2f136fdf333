import Synchronization

/// The readiness of a transport's credentials: not loaded yet, loaded, or why loading failed.
/// Transports load them when the pipeline starts, and again on use after a failure.
public final class CredentialsReadiness: Sendable {
    private let problem = Mutex<String?>("credentials not loaded yet")
    let provider: String

    public init(provider: String) {
        self.provider = provider
    }

    public var notReadyReason: String? { problem.withLock { $0 } }

    /// Runs `load`, remembering whether it worked.
    public func loading<Loaded>(_ load: () async throws -> Loaded) async throws -> Loaded {
        do {
            let loaded = try await load()
            problem.withLock { $0 = nil }
            return loaded
        } catch {
            problem.withLock { $0 = "\(provider) credentials: \(error)" }
            throw error
        }
    }
}
