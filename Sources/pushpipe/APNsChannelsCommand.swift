import ArgumentParser
import Foundation
import PushPipeCore
import PushPipeStages

/// `pushpipe apns channels create | list | read | delete`: iOS 18 broadcast channels, with the
/// `.p8` key the `apns` transport uses (its values default to the same environment variables
/// as the shipped pipelines).
struct APNsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "apns", abstract: "APNs tools.", subcommands: [Channels.self])

    struct Channels: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "channels",
            abstract: "Manage broadcast channels for Live Activities (iOS 18).",
            subcommands: [Create.self, List.self, Read.self, Delete.self]
        )
    }

    struct Credentials: ParsableArguments {
        @Option(help: "Team id (default: $APNS_TEAM_ID).") var teamId: String?
        @Option(help: "Key id of the .p8 key (default: $APNS_KEY_ID).") var keyId: String?
        @Option(help: "Path of the .p8 key (default: $APNS_KEY_PATH).") var keyPath: String?
        @Option(help: "The app's bundle id.") var bundleId: String
        @Flag(help: "Apple's sandbox (development builds).") var sandbox = false
        @Option(help: "Another channel-management host, e.g. a stand-in (https://host:port).") var baseUrl = ""
        @Option(help: "PEM file of extra CAs to trust.") var caFile = ""

        func manager() async throws -> APNsChannelManager {
            let environment = ProcessInfo.processInfo.environment
            guard let team = teamId ?? environment["APNS_TEAM_ID"], let key = keyId ?? environment["APNS_KEY_ID"],
                let path = keyPath ?? environment["APNS_KEY_PATH"]
            else {
                throw ValidationError("give --team-id, --key-id and --key-path (or APNS_TEAM_ID, APNS_KEY_ID, APNS_KEY_PATH)")
            }
            return try await APNsChannelManager(
                keyPath: path,
                keyID: key,
                teamID: team,
                bundleID: bundleId,
                sandbox: sandbox,
                baseURL: baseUrl,
                caFile: caFile
            )
        }
    }

    /// Runs `body` with a manager and shuts it down; an APNs refusal is a clear error, exit 1.
    static func withManager(_ credentials: Credentials, _ body: @Sendable (APNsChannelManager) async throws -> Void) async throws {
        let manager = try await credentials.manager()
        do {
            try await body(manager)
            await manager.shutdown()
        } catch let failure as APNsChannelManager.Failure {
            await manager.shutdown()
            FileHandle.standardError.write(Data("pushpipe: \(failure)\n".utf8))
            throw ExitCode(1)
        } catch {
            await manager.shutdown()
            throw error
        }
    }

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "create", abstract: "Create a channel and print its id.")
        @OptionGroup var credentials: Credentials
        @Flag(help: "APNs keeps the latest message (up to 8 hours) for devices that were offline (message storage policy 1).")
        var storeLatest = false

        func run() async throws {
            try await APNsCommand.withManager(credentials) { [storeLatest] in print(try await $0.create(storesLatest: storeLatest)) }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "list", abstract: "Print every channel's id, one per line.")
        @OptionGroup var credentials: Credentials

        func run() async throws {
            try await APNsCommand.withManager(credentials) { for id in try await $0.list() { print(id) } }
        }
    }

    struct Read: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "read", abstract: "Print a channel's configuration (JSON).")
        @OptionGroup var credentials: Credentials
        @Argument(help: "The channel id.") var channel: String

        func run() async throws {
            try await APNsCommand.withManager(credentials) { [channel] in print(try await $0.read(channel).compactText) }
        }
    }

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "delete", abstract: "Delete a channel (irreversible).")
        @OptionGroup var credentials: Credentials
        @Argument(help: "The channel id.") var channel: String

        func run() async throws {
            try await APNsCommand.withManager(credentials) { [channel] in
                try await $0.delete(channel)
                print("deleted \(channel)")
            }
        }
    }
}
