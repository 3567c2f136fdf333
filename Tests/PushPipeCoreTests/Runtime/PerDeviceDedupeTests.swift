import Foundation
import Logging
import PushPipeCore
import PushPipePostgres
import PushPipePostgresTesting
import PushPipeTesting
import Synchronization
import Testing

/// A poller's watermark moves only once every device of the user got the items, so while one
/// device keeps failing with a retryable error, the devices reached are kept and each check
/// sends the items only to the others. Checked on both stores: the devices reached are state
/// rows, and an update must read every state row back as written, not as a number.
@Suite struct PerDeviceDedupeTests {
    static let pipeline = """
        filters:
          - {type: dedupe.timestamp, items: games, timestamp: last_move, item_id: game_id}
        renderer: {type: json.template, payload: {game: {$from: "games[0].game_id"}}}
        delivery: {attempts: 2, backoff: 10ms, max_backoff: 10ms}
        """

    static let good = String(repeating: "aa", count: 16)
    static let failing = String(repeating: "bb", count: 16)
    static let failure = TransportOutcome.retryAfter(seconds: nil, reason: ProviderReason(code: "ServiceUnavailable", "ServiceUnavailable"))

    static func games(_ lastMove: Int64) -> JSON { ["games": [["game_id": 1, "last_move": .int(lastMove)]]] }

    @Test func sqlite() async throws {
        try await ScriptedPipeline.with(Self.pipeline) { pipeline in
            try await checks(pipeline, stores: [pipeline.store])
        }
    }

    /// Two daemons on one database, taking turns at the checks.
    @Test(.enabled(if: TestStores.postgresURL != nil, "PUSHPIPE_TEST_POSTGRES_URL is not set: no PostgreSQL server to test against"))
    func postgresSharedByTwoDaemons() async throws {
        try await ScriptedPipeline.with(Self.pipeline) { pipeline in
            let location = try await TestStores.freshPostgresDatabase()
            let first = try await PostgresStore(location: location, logger: Logger(label: "per-device"))
            let second = try await PostgresStore(location: location, logger: Logger(label: "per-device"))
            try await withCleanup(
                { try await checks(pipeline, stores: [first, second]) },
                cleanup: {
                    try? await first.close()
                    try? await second.close()
                }
            )
        }
    }

    /// Checks of one user with two devices, one failing at every attempt of three checks; the
    /// checks go to each store in turn.
    func checks(_ pipeline: ScriptedPipeline, stores: [any Store]) async throws {
        let processors = stores.map { store in
            EventProcessor(
                definition: pipeline.definition,
                store: store,
                logger: Logger(label: "per-device"),
                mode: .live,
                output: OutputSink { _ in }
            )
        }
        let turn = Mutex(0)
        func check(_ lastMove: Int64) async -> EventReport {
            let processor = processors[
                turn.withLock { turn in
                    defer { turn += 1 }
                    return turn % processors.count
                }
            ]
            return await processor.process(pipeline.event(user: "alice", Self.games(lastMove)))
        }
        let store = stores[0]
        for token in [Self.good, Self.failing] {
            try await store.pipeline(pipeline.definition.name).register(
                DeviceToken(user: "alice", kind: "device", value: token),
                environment: nil,
                replace: false
            )
        }
        let transport = pipeline.transport
        func sends(_ token: String) -> Int { transport.sends.filter { $0 == token }.count }
        transport.script(Self.failing, Array(repeating: Self.failure, count: 6))

        let first = await check(100)
        #expect(first.status == .partial)
        #expect(sends(Self.good) == 1 && sends(Self.failing) == 2)

        for number in 2...3 {
            let again = await check(100)
            #expect(again.status == .failed, "check \(number): only the failing device was tried")
            #expect(sends(Self.good) == 1, "check \(number): the device that got the move does not get it again")
            #expect(sends(Self.failing) == 2 * number, "check \(number): the failing device is retried, as often as the policy says")
        }

        // It recovers: it gets the move once, and the watermark moves.
        let recovered = await check(100)
        #expect(recovered.status == .delivered)
        #expect(recovered.deliveries.map(\.token) == [DeviceToken(user: "alice", kind: "device", value: Self.failing).masked])
        let after = await check(100)
        #expect(after.status == .filtered)
        #expect(after.reason?.contains("nothing newer") == true, "the watermark moved")
        #expect(sends(Self.good) == 1 && sends(Self.failing) == 7)

        // A new move goes to both, once each.
        let next = await check(200)
        #expect(next.status == .delivered)
        #expect(sends(Self.good) == 2 && sends(Self.failing) == 8)

        // The failing device fails again, then is unregistered: every device left has the
        // move, so the watermark moves without a send instead of the move coming back.
        transport.script(Self.failing, [Self.failure, Self.failure])
        #expect(await check(300).status == .partial)
        // Removed through each store: a daemon's token cache forgets only what it removed itself.
        for store in stores {
            _ = try await store.pipeline(pipeline.definition.name).removeToken(kind: "device", token: Self.failing, unlessUpdatedAfter: nil)
        }
        let nobodyLeft = await check(300)
        #expect(nobodyLeft.status == .noRecipients)
        let settled = await check(300)
        #expect(settled.reason?.contains("nothing newer") == true, "the watermark moved")
        #expect(sends(Self.good) == 3 && sends(Self.failing) == 10)
    }
}
