import Foundation
import Logging
import PushPipeCore
import PushPipeTesting
import ServiceLifecycle
import Testing

@testable import PushPipeSQLite

/// The store as the daemon's first service: closed when the group stops gracefully (last, as
/// the group stops services in reverse), left open when the group is cancelled (other services
/// may still write), and closed once whoever closes it after the group.
@Suite struct StoreServiceTests {
    static func write(_ store: SQLiteStore, _ user: String) async throws {
        try await store.pipeline("p").register(
            DeviceToken(user: user, kind: "device", value: String(repeating: "ab", count: 32)),
            environment: nil,
            replace: false
        )
    }

    @Test func aGracefulStopClosesTheStoreACancellationLeavesItOpen() async throws {
        let directory = try TemporaryDirectory("store-service")
        defer { directory.remove() }

        let cancelled = try SQLiteStore(path: directory.file("cancelled.sqlite"))
        let open = StoreService(cancelled)
        let running = Task { try await open.run() }
        running.cancel()
        _ = await running.result
        try await Self.write(cancelled, "after-cancel")
        #expect(try await cancelled.pipeline("p").isRegistered(user: "after-cancel"), "still open: its owner closes it after the group")
        try await open.closeIfOpen()
        try await open.closeIfOpen()
        await #expect(throws: (any Error).self, "closed once, then refused") { try await Self.write(cancelled, "after-close") }

        let stopped = try SQLiteStore(path: directory.file("stopped.sqlite"))
        let service = StoreService(stopped)
        let group = ServiceGroup(configuration: .init(services: [.init(service: service)], logger: Logger(label: "test")))
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            try await Self.write(stopped, "before-stop")
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
        await #expect(throws: (any Error).self, "closed by the graceful stop") { try await Self.write(stopped, "after-stop") }
        try await service.closeIfOpen()
    }
}
