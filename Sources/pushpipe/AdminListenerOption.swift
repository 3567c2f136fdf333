import ArgumentParser
import Foundation

/// `--admin URL`: the running daemon a command asks (`tap`, `probe`), checked once where it enters.
struct AdminListenerOption: ParsableArguments {
    @Option(name: .long, help: "The daemon's admin listener (its app listener serves /readyz and /healthz too).")
    var admin = "http://127.0.0.1:9090"

    /// `path` (and `query`) on the admin listener's URL.
    func url(_ path: String, query: [URLQueryItem] = []) throws -> URL {
        guard var components = URLComponents(string: admin), components.scheme == "http" || components.scheme == "https",
            components.host != nil
        else { throw ValidationError("--admin must be a URL such as http://127.0.0.1:9090") }
        components.path = (components.path.hasSuffix("/") ? String(components.path.dropLast()) : components.path) + path
        components.queryItems = query.isEmpty ? nil : query
        guard let url = components.url else { throw ValidationError("--admin: not a URL") }
        return url
    }

    func validate() throws { _ = try url("/") }
}
