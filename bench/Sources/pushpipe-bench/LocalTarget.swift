import ArgumentParser
import Foundation

/// Benchmarks send load: only to this machine.
enum LocalTarget {
    static func check(_ url: String) throws {
        guard let host = URL(string: url)?.host, ["127.0.0.1", "localhost", "::1"].contains(host) else {
            throw ValidationError("benchmarks only target this machine (127.0.0.1 / localhost)")
        }
    }
}
