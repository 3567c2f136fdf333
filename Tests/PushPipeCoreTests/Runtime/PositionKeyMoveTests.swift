import Foundation
import Logging
import PushPipePostgres
import PushPipePostgresTesting
import PushPipeSQLite
import PushPipeStages
import PushPipeTesting
import Testing

@testable import PushPipeCore

/// What earlier versions queued under a source's position (`sources[0]`) moves to its key:
/// only what nobody works on, so that what a daemon of that version still running holds is
/// not sent again, and every lease while the pipeline runs, so that what such a daemon lets
/// go of later does not wait for a restart.
@Suite struct PositionKeyMoveTests {
    struct NoListener: RouteServing {
        func replaceRoutes(_ routes: RouteTable) {}
    }

    @Test func sqlite() async throws {
        let directory = try TemporaryDirectory("position-moves")
        defer { directory.remove() }
        try await movesWhatEarlierDaemonsLetGoOf(try SQLiteStore(path: directory.file("state.sqlite")), directory: directory)
    }

    @Test(.enabled(if: TestStores.postgresURL != nil, "PUSHPIPE_TEST_POSTGRES_URL is not set: no PostgreSQL server to test against"))
    func postgres() async throws {
        let directory = try TemporaryDirectory("position-moves")
        defer { directory.remove() }
        let store = try await PostgresStore(location: try await TestStores.freshPostgresDatabase(), logger: Logger(label: "position-moves"))
        try await movesWhatEarlierDaemonsLetGoOf(store, directory: directory)
    }

    /// This process plays the daemon of the earlier version too: on either store, a claim here
    /// leaves what this process holds under a running lease.
    func movesWhatEarlierDaemonsLetGoOf(_ store: any Store, directory: TemporaryDirectory) async throws {
        try await withCleanup(
            {
                let definition = try await Self.pipeline(in: directory)
                func queued(_ id: String) -> QueuedEvent {
                    QueuedEvent(
                        pipeline: "moves",
                        source: "sources[0]",
                        instance: "an-earlier-daemon",
                        eventID: id,
                        user: "u",
                        time: Date().timeIntervalSince1970,
                        body: ["n": 1],
                        lease: .seconds(-1)
                    )
                }
                // One event the earlier daemon is sending (its lease runs), one a daemon that died left.
                try await store.enqueue(queued("held"))
                let held = try await store.pipeline("moves").claimQueuedEvents(source: "sources[0]", lease: .seconds(3600), limit: 10)
                #expect(held.map(\.eventID) == ["held"])
                try await store.enqueue(queued("left"))

                let (logger, messages) = StreamingLogHandler.logger()
                let moves = ObservedState<[String]>([])
                let reading = Task {
                    for await message in messages where message.contains("moved from sources[0]") { moves.update { $0.append(message) } }
                }
                defer { reading.cancel() }
                func waitForMoves(_ count: Int, _ what: String) async throws {
                    try await moves.wait(timeout: 60, { $0.count >= count ? () : nil }, failure: { WaitTimedOut("\(what): moves logged \($0)") })
                }
                func waitingUnderThePosition() async throws -> Int {
                    try await store.queuedEventCounts().first { $0.pipeline == "moves" && $0.source == "sources[0]" }?.count ?? 0
                }

                let supervisor = PipelineSupervisor(
                    initial: [definition],
                    store: store,
                    host: NoListener(),
                    logger: logger,
                    mode: .live,
                    output: OutputSink { _ in }
                )
                let running = Task { try await supervisor.run() }
                try await withCleanup(
                    {
                        try await waitForMoves(1, "the start moves what was left")
                        #expect(moves.value.first?.contains("1 of pipeline moves") == true, "only what was left: \(moves.value)")
                        // Accepted by the earlier daemon after the start, and let go of: a later pass moves it.
                        try await store.enqueue(queued("later"))
                        try await waitForMoves(2, "a later pass moves what was accepted after the start")
                        #expect(try await waitingUnderThePosition() == 1, "the held event stays with its holder")
                        // Its holder lets go of it: a later pass moves it too.
                        try await store.pipeline("moves").releaseLeases(source: "sources[0]", keys: Set(held.map(\.key)))
                        try await waitForMoves(3, "a later pass moves what its holder let go of")
                        #expect(try await waitingUnderThePosition() == 0)
                        #expect(moves.value.allSatisfy { $0.contains("1 of pipeline moves") }, "each moved once: \(moves.value)")
                    },
                    cleanup: {
                        supervisor.beginStopping()
                        try? await running.value
                    }
                )
            },
            cleanup: { try? await store.close() }
        )
    }

    /// An `http.event` source whose 1 s lease makes a pass every second.
    static func pipeline(in directory: TemporaryDirectory) async throws -> PipelineDefinition {
        let file = try directory.write(
            "moves.yaml",
            """
            pipeline: moves
            sources:
              - {type: http.event, path: /events, lease: 1s}
            renderer: {type: json.template, payload: {n: {$from: n}}}
            transport: {type: stdout, format: compact}
            """
        )
        let loader = ConfigLoader(builtins: BuiltinStages.all, interpolation: EnvironmentInterpolation(environment: [:]))
        let result = await loader.load(pipelineFiles: [file], pluginsDirectory: nil)
        guard let definition = result.pipelines.first else { throw ConfigurationError(result.diagnostics) }
        return definition
    }
}
