import PushPipeCore
import Synchronization

/// The channel manager, made on first use (it reads the key, which a dry run may not have) and
/// shared by the routes of one `apns.channels` entry, and shut down when its pipeline stops.
final class ChannelManagerHolder: LongRunningStage, Sendable {
    private let configuration: APNsChannelsRoutes.Configuration
    /// The manager's making, once begun; and whether the pipeline stopped, after which no
    /// request makes one again (nothing would shut it down).
    private let state = Mutex<(task: Task<APNsChannelManager, any Error>?, stopped: Bool)>((nil, false))
    private let creating = Mutex<[String: Task<(channel: String, created: Bool), any Error>]>([:])

    init(_ configuration: APNsChannelsRoutes.Configuration) {
        self.configuration = configuration
    }

    func manager() async throws -> APNsChannelManager {
        let configuration = configuration
        let current = try state.withLock { state throws(RouteError) -> Task<APNsChannelManager, any Error> in
            guard !state.stopped else { throw RouteError(503, "the pipeline is stopping", field: nil) }
            if let current = state.task { return current }
            let made = Task {
                try await APNsChannelManager(
                    keyPath: configuration.keyPath,
                    keyID: configuration.keyId,
                    teamID: configuration.teamId,
                    bundleID: configuration.bundleId,
                    sandbox: configuration.sandbox,
                    baseURL: configuration.baseUrl,
                    caFile: configuration.caFile
                )
            }
            state.task = made
            return made
        }
        do {
            return try await current.value
        } catch {
            // A key that could not be read is read again next time.
            state.withLock { if $0.task == current { $0.task = nil } }
            // The reason (a path, a parse error) is the operator's: `pushpipe validate` tells it.
            throw RouteError(503, "the APNs credentials could not be read", field: nil)
        }
    }

    /// Runs `work` for `owner` once at a time in this daemon: a second request for the same group
    /// while the first creates its channel waits for that channel instead of making another.
    func once(
        _ owner: String,
        _ work: @escaping @Sendable () async throws -> (channel: String, created: Bool)
    ) async throws
        -> (channel: String, created: Bool)
    {
        let (running, mine) = creating.withLock { running -> (Task<(channel: String, created: Bool), any Error>, Bool) in
            if let existing = running[owner] { return (existing, false) }
            let started = Task { try await work() }
            running[owner] = started
            return (started, true)
        }
        defer { if mine { creating.withLock { $0[owner] = nil } } }
        let result = try await running.value
        return mine ? result : (result.channel, false)
    }

    func run(context: StageContext) async throws {
        await untilCancelled()
        await shutdown()
    }

    func shutdown() async {
        let made = state.withLock { state in
            state.stopped = true
            return state.task
        }
        if let manager = try? await made?.value { await manager.shutdown() }
    }
}
