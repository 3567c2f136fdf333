import ArgumentParser
import Foundation
import Logging
import PostgresNIO
import PushPipeCore
import PushPipePostgres
import PushPipePostgresTesting
import PushPipeSQLite
import PushPipeTesting
import Synchronization

/// The chaos soak (issue 33): three daemons on one PostgreSQL database with a shared reply
/// folder, the OGS stand-in, and per daemon an APNs stand-in that answers slowly (the queues
/// fill) and with 503, 429, GOAWAY and 410. At random: SIGKILL and restart, SIGTERM and
/// restart, SIGHUP with a changed pipeline, `pg_terminate_backend` on the daemons'
/// connections, a database outage longer than the lease; the third daemon's clock runs a
/// minute ahead (faketime). Then a calm end until all that was accepted is delivered, a
/// graceful stop, and one table. Traffic stays on 127.0.0.1; everything is bounded in time.
struct ChaosCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "chaos", abstract: "Chaos soak across three daemons on PostgreSQL.")

    @Option(help: "Seconds of faults.") var seconds = 600.0
    @Option(
        help: ArgumentHelp(
            "A PostgreSQL server (postgres://user@host:port/database?sslmode=disable); a fresh database is made on it. Default: "
                + "$PUSHPIPE_TEST_POSTGRES_URL."
        )
    )
    var postgres: String?
    @Option(help: "Seconds of the database outage (ALLOW_CONNECTIONS false), longer than the 15 s lease.") var outage = 30.0
    @Option(help: "Seconds into the faults when the outage starts (default: drawn at random).") var outageAt: Double?
    @Option(help: "Events posted per second.") var eventRate = 20.0
    @Option(help: "Reply files written per second.") var replyRate = 3.0
    @Option(help: "OGS games that become the player's turn per second.") var moveRate = 0.5
    @Option(help: "Random seed for the schedule of faults.") var seed: UInt64 = 33
    @Option(help: "A directory where each daemon's whole log is written (instance-N.log) once it ends.") var logs: String?
    @Flag(
        help: ArgumentHelp(
            "Also hostile counterparts (issue 45): Web Push services that redirect inward, throttle for an hour, answer garbage or hang; "
                + "broadcasts to thousands stopped on random pages; SIGTERM with full queues; a second process on a SQLite daemon's state."
        )
    )
    var adversarial = false

    static let daemons = 3
    /// How far ahead the third daemon's clock runs (faketime), in seconds.
    static let skew = 60.0
    static let player: Int64 = 1_783_478
    static let liveToken = String(repeating: "ab", count: 32)
    static let deadToken = String(repeating: "de", count: 32)

    func run() async throws {
        guard let server = postgres ?? TestStores.postgresURL else {
            throw ValidationError("--postgres or PUSHPIPE_TEST_POSTGRES_URL names a server")
        }
        guard FakeTime.isInstalled else { throw ValidationError("Debian's faketime is not installed (the third daemon runs a minute ahead)") }
        let url = try await TestStores.freshPostgresURL(on: server)
        let directory = try TemporaryDirectory("chaos")
        defer { directory.remove() }
        let random = SeededRandom(seed: seed)
        let ledger = ChaosLedger(inFlightWindow: .seconds(10), logDirectory: logs)
        let faulty = Atomic<Bool>(true)
        let slots = Self.daemons + (adversarial ? 1 : 0)
        let daemons = ChaosDaemons(count: slots, ledger: ledger)
        let adversary = adversarial ? try await ChaosAdversary.start(in: directory) : nil
        /// Slots whose stand-in holds every answer (the pipelines fill) until a SIGTERM ended them.
        let held = HeldSlots()

        var environments: [[String: String]] = []
        var standIns: [APNsStandIn] = []
        let ogs = try await OGSStandIn.start()
        for slot in 0..<slots {
            let credentials = try TemporaryDirectory("chaos-apns-\(slot)")
            let (apns, environment) = try await APNsStandIn.startWithThrowawayCredentials(
                in: credentials,
                teamID: "CHAOSTEAM\(slot)",
                keyID: "CHAOSKEY0\(slot)"
            )
            apns.answer { request in
                if request.token == Self.deadToken { return .reject(status: 410, reason: "Unregistered", timestamp: 0) }
                if faulty.load(ordering: .relaxed) {
                    switch random.next(100) {
                    case 0..<5: return .reject(status: 503, reason: "ServiceUnavailable")
                    case 5..<9: return .reject(status: 429, reason: "TooManyRequests")
                    case 9..<10:
                        ledger.connectionCut(daemons.instance(of: slot))
                        return .goAway(reason: "Shutdown")
                    default: break
                    }
                }
                ledger.delivered(request, by: daemons.instance(of: slot), skew: slot == Self.daemons - 1 ? Self.skew : 0)
                if held.contains(slot) { return .delayed(.seconds(1.5), .accept) }
                // Slow enough that the pipelines fill (backpressure) under the soak's rates.
                return faulty.load(ordering: .relaxed) ? .delayed(.seconds(0.25), .accept) : .accept
            }
            apns.whenConnectionLost { ledger.connectionCut(daemons.instance(of: slot)) }
            standIns.append(apns)
            environments.append(
                environment.merging(
                    [
                        "OGS_API_BASE": ogs.baseURL, "CHECK_INTERVAL_SECONDS": "1",
                        "SOAK_REPLY_DIR": directory.file("replies"),
                    ].merging(adversary?.environment ?? [:]) { _, new in new }
                ) { _, new in new }
            )
        }
        // The adversarial mode's broadcasts keep a loaded machine's event loops busy: a 2 s timeout
        // there is mostly the machine's lag, each one a send made twice.
        let transport = SoakPipelines.transport(
            delivery: "concurrency: 4, attempts: 30, backoff: 20ms, max_backoff: 500ms, drain_timeout: 60s",
            timeout: adversarial ? "10s" : "2s"
        )
        try SoakPipelines.write(into: directory, transport: transport)
        var arguments = ["run", "--listen", "127.0.0.1:0", "--store", url, "--plugins", adversary == nil ? "none" : directory.file("plugins.d")]
        // The fourth daemon keeps its state in SQLite, where a second process must be refused.
        let lone = try TemporaryDirectory("chaos-sqlite")
        defer { lone.remove() }
        let loneArguments = ["run", "--listen", "127.0.0.1:0", "--state", lone.file("state/pushpipe.sqlite"), "--plugins", "none"]
        if let adversary {
            try SoakPipelines.writeAdversarial(into: directory, transport: transport)
            try SoakPipelines.writeEventsOnly(into: lone, transport: transport)
            arguments += adversary.allowedOrigins
        }
        let admin = try ChaosDatabase(url: url)
        let second = Mutex((refused: 0, ran: 0))

        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await admin.run() }
            for slot in 0..<slots {
                let launcher = slot == Self.daemons - 1 ? FakeTime.launcher(offset: "+\(Int(Self.skew))s") : []
                let environment = environments[slot]
                let (path, slotArguments) = slot < Self.daemons ? (directory.path, arguments) : (lone.path, loneArguments)
                group.addTask {
                    try await daemons.keepRunning(slot: slot, arguments: slotArguments, directory: path, environment: environment, launcher: launcher)
                }
            }
            // Registrations once, through the first daemon.
            let client = HTTPTestClient(port: try await daemons.port(of: 0))
            for (path, body) in SoakPipelines.registrations(live: Self.liveToken, dead: Self.deadToken, player: Self.player) {
                let response = try await SetupRequest.post(client, path, body)
                guard response.status == 200 else { throw ValidationError("registration \(path) failed: \(response.text)") }
            }
            for slot in 1..<slots { _ = try await daemons.port(of: slot) }
            if let adversary {
                try await adversary.register(through: client)
                let loneClient = HTTPTestClient(port: try await daemons.port(of: Self.daemons))
                for (path, body) in SoakPipelines.registrations(live: Self.liveToken, dead: Self.deadToken, player: Self.player)
                where path == "/soak/register" {
                    let response = try await SetupRequest.post(loneClient, path, body)
                    guard response.status == 200 else { throw ValidationError("registration \(path) failed: \(response.text)") }
                }
            }

            let deadline = ContinuousClock.now + .seconds(seconds)
            let producer = Task { [eventRate, replyRate, moveRate] in
                try await SoakProducer(
                    eventRate: eventRate,
                    replyRate: replyRate,
                    moveRate: moveRate,
                    player: Self.player,
                    scheduledRate: 2,
                    digestRate: 2
                )
                .run(until: deadline, directory: directory, ogs: ogs, ledger: ledger) {
                    daemons.anyPort(random).map { (HTTPTestClient(port: $0), "user-\(random.next(SoakPipelines.users))") }
                }
            }
            let hostile = Task {
                await adversary?.produce(until: deadline, webRate: 4, broadcastEvery: 9, ledger: ledger, random: random) {
                    daemons.anyPort(random, among: 0..<Self.daemons).map { HTTPTestClient(port: $0) }
                }
            }
            let collector = Task { await adversary?.collect(into: ledger) }
            var title = 0
            var lastOutage = ContinuousClock.now - .seconds(outage * 3 + 1)
            while ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(Int64(3000 + random.next(5000))))
                if adversary != nil, random.next(100) < 20 {
                    if random.next(2) == 0 {
                        await Self.terminateFull(slot: random.next(Self.daemons), daemons: daemons, held: held, ledger: ledger)
                    } else if let port = daemons.currentPort(of: Self.daemons) {
                        let outcome = await Self.startSecond(
                            arguments: loneArguments,
                            directory: lone.path,
                            environment: environments[Self.daemons],
                            holder: port,
                            ledger: ledger
                        )
                        second.withLock { counts in
                            switch outcome {
                            case .refused: counts.refused += 1
                            case .served: counts.ran += 1
                            case .stillStarting: break
                            }
                        }
                    }
                    FileHandle.standardError.write(Data("chaos: \(ledger.progress)\n".utf8))
                    continue
                }
                let slot = random.next(slots)
                let forcedOutage =
                    outageAt.map { ContinuousClock.now >= deadline - .seconds(seconds - $0) && lastOutage < deadline - .seconds(seconds) } ?? false
                switch forcedOutage ? 99 : random.next(100) {
                case 0..<30:
                    ledger.fault("SIGKILL", instance: daemons.instance(of: slot))
                    await daemons.command(.kill, slot: slot)
                case 30..<50:
                    ledger.fault("SIGTERM", instance: daemons.instance(of: slot))
                    await daemons.command(.terminate, slot: slot)
                case 50..<70:
                    title += 1
                    try SoakPipelines.write(into: directory, transport: transport, eventsTitle: "Soak \(title)")
                    await daemons.command(.reload, slot: slot)
                    ledger.fault("SIGHUP", instance: daemons.instance(of: slot))
                case 70..<90:
                    try await admin.terminateBackends()
                    ledger.fault("pg_terminate_backend")
                default:
                    guard ContinuousClock.now - lastOutage > .seconds(outage * 3), ContinuousClock.now + .seconds(outage) < deadline else { continue }
                    ledger.fault("outage")
                    let began = ContinuousClock.now
                    try await admin.outage(seconds: outage)
                    ledger.databaseBack(since: began)
                    lastOutage = ContinuousClock.now
                }
                FileHandle.standardError.write(Data("chaos: \(ledger.progress)\n".utf8))
            }
            _ = try? await producer.value
            _ = await hostile.value
            FileHandle.standardError.write(Data("chaos: faults over; calm until everything accepted is delivered\n".utf8))
            faulty.store(false, ordering: .relaxed)
            ledger.mark("calm")
            if let adversary { try? FileManager.default.removeItem(atPath: adversary.renderFaults) }
            // The backlog the faults left drains at the daemons' pace: the calm goes on while
            // deliveries do (a minute without one ends it), for at most the faults' length plus 180 s.
            let calm = ContinuousClock.now + .seconds(180 + seconds)
            var replayed = 0
            var lastReplay = ContinuousClock.now
            var lastProgress = (lost: ledger.lost, at: ContinuousClock.now)
            while ContinuousClock.now < calm, ledger.lost > 0, ContinuousClock.now - lastProgress.at < .seconds(60) {
                try await Task.sleep(for: .milliseconds(500))
                if ledger.lost < lastProgress.lost { lastProgress = (ledger.lost, ContinuousClock.now) }
                // Broadcasts a failing page stopped are dead letters: the operator replays them.
                if adversary != nil, ContinuousClock.now - lastReplay > .seconds(5) {
                    replayed += await Self.replayBroadcasts(store: url, directory: directory.path)
                    lastReplay = ContinuousClock.now
                }
            }
            // Retries and reclaims that would send something twice come within a lease or two,
            // and the holds of a daemon killed at the end lapse (`hold`, 30 s).
            try await Task.sleep(for: .seconds(35))
            await daemons.stopAll()
            collector.cancel()
            await collector.value
            var (queued, holds) = try await admin.leftovers()
            if adversary != nil { queued += try await Self.queuedRows(sqlite: lone.file("state/pushpipe.sqlite")) }
            group.cancelAll()
            for standIn in standIns { await standIn.stop() }
            await ogs.stop()
            let summary = ledger.summary()
            print(Self.table(summary, queued: queued, holds: holds, seconds: seconds))
            let timing = ledger.timing.summary()
            print(Self.timingTable(timing))
            var adversarialFailure = false
            if let adversary {
                adversarialFailure = Self.printAdversarial(adversary, ledger: ledger, replayed: replayed, second: second.withLock { $0 })
                await adversary.stop()
            }
            for account in ledger.lostAccounts() { print("lost \(account)") }
            let timingFailure = timing.early > 0 || timing.largestExcursion > Self.excursionBound || timing.largestLate > Self.lateBound
            if summary.lost > 0 || summary.unexplained > 0 || queued > 0 || holds > 0 || adversarialFailure || timingFailure { throw ExitCode(1) }
        }
    }

    /// The most a scheduled send may leave after its window closed (passed while open, then
    /// waiting in a full pipeline for the slow stand-in, or held up by a fault) under the
    /// soak's faults: a 20 s outage, a lease of 15 s to wait out after a SIGKILL, retries
    /// backing off up to 0.5 s, a loaded machine.
    static let excursionBound = 90.0
    /// The most a first send may leave, on the wall clock, after the first opening at or
    /// after its instant: the same faults, and a daemon stopped with a full pipeline, which
    /// drains for up to a minute (`drain_timeout`) before what it held goes to another
    /// (bench/README.md has the measured figures).
    static let lateBound = 150.0

    static func timingTable(_ timing: ChaosTimingAccount.Summary) -> String {
        """
        scheduled sends (at an instant, then a window open in even minutes; judged by the sender's clock):
        | scheduled | sent | early | sends in a closed minute | largest excursion past a close (bound) | late p99 | late max (bound) |
        |---|---|---|---|---|---|---|
        | \(timing.scheduled) | \(timing.sent) | \(timing.early) | \(timing.outside) \
        | \(String(format: "%.1f s (%.0f s)", timing.largestExcursion, excursionBound)) | \(String(format: "%.1f s", timing.p99Late)) \
        | \(String(format: "%.1f s (%.0f s)", timing.largestLate, lateBound)) |
        """ + timing.earlyIDs.prefix(10).map { "\nearly \($0)" }.joined()
    }

    static func table(_ summary: ChaosLedger.Summary, queued: Int, holds: Int, seconds: Double) -> String {
        let faults = summary.faults.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }.joined(separator: ", ")
        return """
            chaos soak: \(Int(seconds)) s of faults across \(daemons) daemons (\(faults))
            | accepted | delivered | lost | duplicates explained (SIGKILL, GOAWAY) | unexplained duplicates | queued events left | live holds left |
            |---|---|---|---|---|---|---|
            | \(summary.accepted) | \(summary.delivered) | \(summary.lost) | \(summary.explained) | \(summary.unexplained) | \(queued) | \(holds) |
            """ + summary.unexplainedAccounts.prefix(20).map { "\nunexplained \($0)" }.joined()
    }
}
