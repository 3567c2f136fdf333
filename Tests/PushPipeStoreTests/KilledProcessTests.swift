import Foundation
import GRDB
import PushPipeTesting
import Testing

/// A daemon killed with SIGKILL in the middle of registrations leaves a consistent database:
/// every row it holds is complete and every acknowledged registration is there.
@Suite struct KilledProcessTests {
    @Test func sigkillDuringRegistrationsLeavesAConsistentDatabase() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try directory.write(
            "pipelines/kill.yaml",
            """
            pipeline: kill
            routes:
              # Four writers, each one user with ever more tokens, from one address: no bound on either.
              - {action: register, path: /register, user_field: user_id, token_kind: device, token_field: device_token,
                 max_tokens_per_user: 1000000, limits: {per_client: off}}
            sources:
              - {type: http.event, path: /events}
            renderer: {type: json.template, payload: {}}
            transport: {type: stdout}
            """
        )
        let acknowledged = try await DaemonProcess.run(
            arguments: ["run", "--listen", "127.0.0.1:0", "--state", "state.sqlite", "--plugins", "none"],
            directory: directory.path
        ) { daemon in
            let client = HTTPTestClient(port: try await daemon.port())
            // Four writers register as fast as they can; after 200 acknowledged registrations the
            // daemon is killed while the others are in flight.
            let acknowledgedCount = Counter()
            let acknowledged = await withTaskGroup(of: [String].self) { group in
                for worker in 0..<4 {
                    group.addTask {
                        var done: [String] = []
                        // No new request once the kill was sent: those in flight then are the test.
                        for index in 0..<5000 where acknowledgedCount.current < 200 {
                            let token = String(format: "%064x", worker * 100_000 + index)
                            guard
                                let response = try? await client.request(
                                    "POST",
                                    "/register",
                                    json: ["user_id": .string("user\(worker)"), "device_token": .string(token)]
                                ),
                                response.status == 200
                            else { return done }
                            done.append(token)
                            if acknowledgedCount.increment() == 200 { daemon.signal(SIGKILL) }
                        }
                        return done
                    }
                }
                return await group.reduce(into: [String]()) { $0 += $1 }
            }
            #expect(try await daemon.waitForExit() == 128 + SIGKILL)
            return acknowledged
        }
        #expect(acknowledged.count >= 200)
        let queue = try DatabaseQueue(path: directory.file("state.sqlite"))
        let integrity = try await queue.read { db in try String.fetchAll(db, sql: "PRAGMA integrity_check") }
        #expect(integrity == ["ok"])
        let stored = Set(try await queue.read { db in try String.fetchAll(db, sql: "SELECT token FROM registrations") })
        let incomplete = try await queue.read { db in
            try Int.fetchOne(
                db,
                sql: "SELECT COUNT(*) FROM registrations WHERE user_id = '' OR token = '' OR created_at IS NULL OR updated_at IS NULL"
            )
        }
        #expect(incomplete == 0)
        #expect(Set(acknowledged).isSubset(of: stored), "an acknowledged registration was lost")
    }
}
