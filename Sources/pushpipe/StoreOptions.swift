import ArgumentParser
import Foundation
import Logging
import PushPipeCore
import PushPipeStores

/// `--store` / `--state`, for the daemon and for the commands that read what it stored.
struct StoreOptions: ParsableArguments {
    @Option(name: .long, help: "SQLite state file (the same as --store sqlite:PATH).")
    var state: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Where state lives: sqlite:PATH (default sqlite:var/pushpipe.sqlite) or postgres://user:password@host:port/database[?sslmode=...]. "
                + "Also PUSHPIPE_STORE."
        )
    )
    var store: String?

    func location() throws -> StoreLocation {
        do {
            let chosen =
                store ?? state.map { "sqlite:\($0)" } ?? ProcessInfo.processInfo.environment["PUSHPIPE_STORE"] ?? "sqlite:var/pushpipe.sqlite"
            return try StoreLocation(parsing: chosen)
        } catch {
            throw ValidationError("--store: \(error)")
        }
    }

    /// Opens the store for one command and closes it after `body`, whatever happens.
    func withStore<Result>(logger: Logger, _ body: (any Store) async throws -> Result) async throws -> Result {
        let store = try await location().open(logger: logger)
        do {
            let result = try await body(store)
            try await store.close()
            return result
        } catch {
            try? await store.close()
            throw error
        }
    }
}
