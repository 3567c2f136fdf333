import Foundation
import Logging
import PushPipeCore
import PushPipeSQLite
import PushPipeTesting
import Synchronization

/// The adversarial mode's faults and its part of the table (issue 45).
extension ChaosCommand {
    /// SIGTERM while the pipelines are full: the slot's stand-in answers after 1.5 s (within the
    /// transport's 2 s timeout, so nothing is sent twice for it), a burst of 200 events fills
    /// the daemon's queues and waits in `submit`, then SIGTERM. The stop must answer the waiting
    /// requests (202 for what is stored, 503 for the rest) and end within `drain_timeout`;
    /// everything answered 202 must still be delivered.
    static func terminateFull(slot: Int, daemons: ChaosDaemons, held: HeldSlots, ledger: ChaosLedger) async {
        guard let port = daemons.currentPort(of: slot) else { return }
        held.hold(slot)
        defer { held.release(slot) }
        let client = HTTPTestClient(port: port, client: HTTPTestClient.manyConnections)
        let answers = await withTaskGroup(of: Int.self) { burst in
            for index in 0..<200 {
                burst.addTask {
                    let id = ledger.nextID("e")
                    let status =
                        (try? await client.request(
                            "POST",
                            "/soak/events",
                            json: ["user": .string("user-\(index % SoakPipelines.users)"), "id": .string(id)],
                            timeout: 120
                        ))?.status ?? 0
                    if status == 202 { ledger.accept(id) }
                    return status
                }
            }
            try? await Task.sleep(for: .seconds(1.5))
            ledger.fault("SIGTERM with full queues", instance: daemons.instance(of: slot))
            await daemons.command(.terminate, slot: slot)
            var answers: [Int: Int] = [:]
            for await status in burst { answers[status, default: 0] += 1 }
            return answers
        }
        ledger.unansweredAtStop(answers[0] ?? 0)
        let counted = answers.sorted { $0.key < $1.key }.map { "\($0.value) × \($0.key == 0 ? "no answer" : String($0.key))" }
        ledger.mark("burst of 200 into a full daemon answered \(counted.joined(separator: ", "))")
        FileHandle.standardError.write(Data("chaos: burst into a full daemon answered \(counted.joined(separator: ", "))\n".utf8))
    }

    /// A second `pushpipe run` on the SQLite daemon's state while that daemon holds it: it must
    /// exit with `state_in_use` before sending anything. Returns whether it served instead (it
    /// listened, or exited 0); one still starting after 180 s on a loaded machine is killed,
    /// and did not serve.
    enum SecondProcess { case refused, served, stillStarting }

    static func startSecond(
        arguments: [String],
        directory: String,
        environment: [String: String],
        holder: Int,
        ledger: ChaosLedger
    ) async -> SecondProcess {
        let instance = ledger.nextInstance(slot: Self.daemons)
        ledger.fault("second process on the same state", instance: instance)
        let environment = environment.merging(["CHAOS_INSTANCE": String(instance)]) { _, new in new }
        do {
            let (status, refused, listened) = try await DaemonProcess.run(arguments: arguments, directory: directory, environment: environment) {
                daemon in
                let listened = { daemon.standardError.contains { $0.contains("listening on") } }
                do {
                    let status = try await daemon.waitForExit(timeout: 180)
                    return (status, daemon.standardError.contains { $0.contains("state_in_use") }, listened())
                } catch {
                    daemon.signal(SIGKILL)
                    _ = try? await daemon.waitForExit()
                    return (Int32(-1), false, listened())
                }
            }
            ledger.mark("second process #\(instance) exited \(status)\(refused ? " (state_in_use)" : "")\(listened ? " after listening" : "")")
            if status == 0 || listened { return .served }
            return refused ? .refused : .stillStarting
        } catch {
            ledger.mark("second process #\(instance) did not start: \(error)")
            return .stillStarting
        }
    }

    /// Replays, as an operator would, the broadcasts that a failing page made dead letters.
    static func replayBroadcasts(store: String, directory: String) async -> Int {
        let listed = try? await DaemonProcess.run(
            arguments: ["dead-letters", "list", "--pipeline", "soak-broadcast", "--json", "--store", store],
            directory: directory
        ) { daemon in
            _ = try await daemon.waitForExit(timeout: 60)
            return daemon.standardOutput.joined(separator: "\n")
        }
        let ids = (listed.flatMap { try? JSON.parse(Data($0.utf8)) }?.arrayValue ?? []).compactMap { $0["id"]?.stringValue }
        guard !ids.isEmpty else { return 0 }
        let status = try? await DaemonProcess.run(
            arguments: ["dead-letters", "replay", "--pipeline", "soak-broadcast", "--store", store] + ids,
            directory: directory
        ) { try await $0.waitForExit(timeout: 60) }
        FileHandle.standardError.write(Data("chaos: replayed \(ids.count) broadcast dead letters (exit \(status.map(String.init) ?? "none"))\n".utf8))
        return ids.count
    }

    /// Accepted events left in the SQLite daemon's queue after its last stop.
    static func queuedRows(sqlite path: String) async throws -> Int {
        let store = try SQLiteStore(path: path)
        let counts = try await store.queuedEventCounts()
        try await store.close()
        return counts.reduce(0) { $0 + $1.count }
    }

    /// Prints the adversarial table; returns whether it shows a failure.
    static func printAdversarial(_ adversary: ChaosAdversary, ledger: ChaosLedger, replayed: Int, second: (refused: Int, ran: Int)) -> Bool {
        let (largest, p99, longestStop) = ledger.extremes
        print(
            """
            | requests seen by the internal server | messages read by hostile push services | broadcast dead letters replayed | second processes refused / served | longest SIGTERM stop | well-behaved Web Push delay: largest, p99 |
            |---|---|---|---|---|---|
            | \(adversary.internalServer.connections) | \(adversary.hostileMessages) | \(replayed) | \(second.refused) / \(second.ran) | \(String(format: "%.1f s", longestStop)) | \(String(format: "%.2f s, %.2f s", largest, p99)) |
            """
        )
        // A stop must end within the events pipeline's 60 s drain and a margin, and answer every
        // request waiting in it; a well-behaved recipient must not wait on a hostile one's
        // hour-long 429 (a minute covers a SIGKILL's lease and a restart on a loaded machine).
        let unanswered = ledger.requestsUnansweredAtStop
        if unanswered > 0 { print("\(unanswered) requests got no answer from a stopping daemon") }
        return adversary.internalServer.connections > 0 || second.ran > 0 || longestStop > 90 || unanswered > 0 || largest > 60
    }
}

/// Slots whose APNs stand-in holds every answer for a while, so that daemon's pipelines fill.
final class HeldSlots: Sendable {
    private let slots = Mutex(Set<Int>())
    func hold(_ slot: Int) { slots.withLock { _ = $0.insert(slot) } }
    func release(_ slot: Int) { slots.withLock { _ = $0.remove(slot) } }
    func contains(_ slot: Int) -> Bool { slots.withLock { $0.contains(slot) } }
}
