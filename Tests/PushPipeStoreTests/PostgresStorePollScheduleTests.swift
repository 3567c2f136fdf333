import Foundation
import Logging
import PushPipePostgresTesting
import PushPipeTesting
import Testing

@testable import PushPipeCore
@testable import PushPipePostgres

/// The poll schedule's upkeep on a shared database: it reads every
/// registration and every scheduled user, so it must run once per period for all daemons,
/// not once per daemon.
@Suite(.enabled(if: TestStores.postgresURL != nil, "PUSHPIPE_TEST_POSTGRES_URL is not set: no PostgreSQL server to test against"))
struct PostgresStorePollScheduleTests {
    @Test func oneDaemonSyncsTheScheduleEachPeriod() async throws {
        let location = try await TestStores.freshPostgresDatabase()
        let logger = Logger(label: "test")
        // Two daemons' stores on one database.
        let first = try await PostgresStore(location: location, logger: logger)
        let second = try await PostgresStore(location: location, logger: logger)
        for user in ["1", "2"] {
            try await first.pipeline("p").register(
                DeviceToken(user: user, kind: "device", value: String(repeating: "ab", count: 32) + user),
                environment: nil,
                replace: false
            )
        }
        let registered = { try await first.pipeline("p").tokens(user: nil, kind: "device").map(\.user) }
        try await first.pipeline("p").work.schedule("poll:s", every: .seconds(30)) { try await registered() }
        let scheduled = { try await first.connections.rows("SELECT count(*) FROM work WHERE kind = 'poll:s'").first?.decode(Int.self) ?? -1 }
        #expect(try await scheduled() == 2)
        try await first.pipeline("p").register(
            DeviceToken(user: "3", kind: "device", value: String(repeating: "cd", count: 32)),
            environment: nil,
            replace: false
        )
        // The second daemon's sync, within the period: already done by the first, so skipped.
        var asked = false
        let synced = try await second.pipeline("p").work.schedule("poll:s", every: .seconds(30)) {
            asked = true
            return try await registered()
        }
        #expect(!synced && !asked, "the second daemon reads no registration either")
        #expect(try await scheduled() == 2, "synced again by a second daemon within the period")
        // A period later (the last sync moved back in time), one of them syncs.
        _ = try await first.connections.rows("UPDATE work SET lease_until = lease_until - 30 WHERE kind = 'schedule-synced'")
        try await second.pipeline("p").work.schedule("poll:s", every: .seconds(30)) { try await registered() }
        #expect(try await scheduled() == 3)
        try await first.close()
        try await second.close()
    }
}
