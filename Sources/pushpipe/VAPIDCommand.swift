import ArgumentParser
import Foundation
import PushPipeStages

/// `pushpipe vapid generate | public-key`: the key pair a `webpush` transport signs with, and
/// the public key a page passes to `pushManager.subscribe` as its `applicationServerKey`.
struct VAPIDCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "vapid",
        abstract: "Make and read the VAPID key pair of Web Push.",
        subcommands: [Generate.self, PublicKey.self]
    )

    struct Generate: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "generate",
            abstract: "Write a new P-256 key pair (PEM, mode 0600) and print its public key."
        )

        @Argument(help: "Where to write the key; an existing file is never replaced.")
        var path = "vapid.pem"

        func run() throws {
            guard !FileManager.default.fileExists(atPath: path) else {
                throw ValidationError("\(path) exists: every subscription was made for its public key; remove it first to start over")
            }
            let publicKey = try VAPIDKeyFile.generate(path: path)
            print("wrote \(path) (keep it secret; the pipeline's `vapid_key_path`)")
            print("applicationServerKey: \(publicKey)")
        }
    }

    struct PublicKey: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "public-key",
            abstract: "Print the base64url applicationServerKey of a key pair."
        )

        @Argument(help: "The key written by `pushpipe vapid generate`.")
        var path = "vapid.pem"

        func run() throws {
            print(try VAPIDKeyFile.publicKey(path: path))
        }
    }
}
