import ArgumentParser
import Foundation
import GRDB
import PushPipeCore
import PushPipePostgres
import PushPipeSQLite
import PushPipeTesting

/// The fault soak (issue 12): the real daemon on three pipelines — `http.event`, a reply
/// folder and the shipped OGS pipeline — against the APNs stand-in answering a mix of 200,
/// 503, 429, 410 and GOAWAY, killed with SIGKILL at random moments and restarted. Then a
/// last calm run until everything accepted is delivered. Every notification carries an id,
/// so the count is exact: accepted, delivered (answered 200), lost, sent more than once.
struct SoakCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "soak",
        abstract: "Fault soak: faults, SIGKILLs, restarts; counts lost and duplicated notifications."
    )

    @Option(help: "Seconds of faults and kills.") var seconds = 120.0
    @Option(help: "Events posted per second (http.event).") var eventRate = 40.0
    @Option(help: "Reply files written per second.") var replyRate = 5.0
    @Option(help: "OGS games that become the player's turn per second.") var moveRate = 1.0
    @Option(help: "Random seed, for a repeatable schedule of kills and faults.") var seed: UInt64 = 12

    static let player: Int64 = 1_783_478
    static let liveToken = String(repeating: "ab", count: 32)
    static let deadToken = String(repeating: "de", count: 32)

    func run() async throws {
        let directory = try TemporaryDirectory("soak")
        defer { directory.remove() }
        let (apns, apnsEnvironment) = try await APNsStandIn.startWithThrowawayCredentials(in: directory, teamID: "SOAKTEAM01", keyID: "SOAKKEY001")
        let ogs = try await OGSStandIn.start()
        let random = SeededRandom(seed: seed)
        let ledger = SoakLedger()
        apns.answer { request in
            if request.token == Self.deadToken { return .reject(status: 410, reason: "Unregistered", timestamp: 0) }
            switch random.next(100) {
            case 0..<8: return .reject(status: 503, reason: "ServiceUnavailable")
            case 8..<13: return .reject(status: 429, reason: "TooManyRequests")
            case 13..<15: return .goAway(reason: "Shutdown")
            default:
                ledger.delivered(request)
                return .accept
            }
        }
        try SoakPipelines.write(into: directory)
        let environment = apnsEnvironment.merging([
            "OGS_API_BASE": ogs.baseURL, "CHECK_INTERVAL_SECONDS": "1",
            "SOAK_REPLY_DIR": directory.file("replies"),
        ]) { _, new in new }
        let arguments = ["run", "--listen", "127.0.0.1:0", "--state", "state.sqlite", "--plugins", "none"]

        // Registrations first, in a calm run: live tokens, and a dead one that APNs answers 410 for.
        try await DaemonProcess.run(arguments: arguments, directory: directory.path, environment: environment) { daemon in
            let client = HTTPTestClient(port: try await daemon.port())
            for (path, body) in SoakPipelines.registrations(live: Self.liveToken, dead: Self.deadToken, player: Self.player) {
                let response = try await client.request("POST", path, json: body)
                guard response.status == 200 else { throw ValidationError("registration \(path) failed: \(response.text)") }
            }
            daemon.signal(SIGTERM)
            _ = try await daemon.waitForExit()
        }

        let deadline = ContinuousClock.now + .seconds(seconds)
        var kills = 0
        while ContinuousClock.now < deadline {
            let life = Duration.milliseconds(Int64(2000 + random.next(6000)))
            try await DaemonProcess.run(arguments: arguments, directory: directory.path, environment: environment) { daemon in
                let client = HTTPTestClient(port: try await daemon.port())
                let until = min(ContinuousClock.now + life, deadline)
                try await SoakProducer(eventRate: eventRate, replyRate: replyRate, moveRate: moveRate, player: Self.player)
                    .run(until: until, directory: directory, ogs: ogs, ledger: ledger) { (client, "user-\(Int.random(in: 0..<SoakPipelines.users))") }
                daemon.signal(SIGKILL)
                _ = try? await daemon.waitForExit()
            }
            kills += 1
            _ = apns.takeRequests()
            FileHandle.standardError.write(Data("soak: \(kills) SIGKILLs, \(ledger.progress)\n".utf8))
        }

        // The calm end: no faults, no kills, until every accepted notification is delivered.
        apns.answer { request in
            if request.token == Self.deadToken { return .reject(status: 410, reason: "Unregistered", timestamp: 0) }
            ledger.delivered(request)
            return .accept
        }
        try await DaemonProcess.run(arguments: arguments, directory: directory.path, environment: environment) { daemon in
            _ = try await daemon.port()  // started: a signal needs its process id
            let calm = ContinuousClock.now + .seconds(90)
            while ContinuousClock.now < calm, ledger.lost > 0 {
                _ = apns.takeRequests()
                try await Task.sleep(for: .milliseconds(500))
            }
            FileHandle.standardError.write(Data("soak: calm run done, \(ledger.progress)\n".utf8))
            daemon.signal(SIGTERM)
            guard let status = try? await daemon.waitForExit() else {
                let lines = daemon.standardError.filter { !$0.contains("checked 1 users") && !$0.contains("nothing newer") }.suffix(40)
                FileHandle.standardError.write(Data("soak: the daemon did not stop after SIGTERM:\n\(lines.joined(separator: "\n"))\n".utf8))
                throw ExitCode(1)
            }
            if status != 0 { FileHandle.standardError.write(Data("soak: the daemon exited with \(status) after SIGTERM\n".utf8)) }
        }
        await apns.stop()
        await ogs.stop()

        let integrity = try await DatabaseQueue(path: directory.file("state.sqlite")).read { db in
            try String.fetchAll(db, sql: "PRAGMA integrity_check").joined(separator: "; ")
        }
        print(ledger.summary(kills: kills, integrity: integrity))
        if ledger.lost > 0 || integrity != "ok" { throw ExitCode(1) }
    }
}
