import Foundation

/// The only places an OGS notification may open: `ogs://game/<digits>` (mapped to its web
/// page) and `https://online-go.com/...`. Everything else is refused — no open redirect.
public enum OGSDeepLink {
    static let maximumLength = 2048
    static let host = "online-go.com"

    public static func route(_ text: String) -> URL? {
        guard !text.isEmpty, text.count <= maximumLength, !text.contains(where: { $0.isWhitespace || $0 == "\\" }) else { return nil }
        if text.lowercased().hasPrefix("ogs:") {
            // Exactly ogs://game/<digits>, nothing before or after.
            let prefix = "ogs://game/"
            guard text.hasPrefix(prefix) else { return nil }
            let id = text.dropFirst(prefix.count)
            guard (1...12).contains(id.count), id.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
            return URL(string: "https://\(host)/game/\(id)")
        }
        guard let components = URLComponents(string: text), components.scheme == "https",
            components.host?.lowercased() == host, components.user == nil, components.password == nil,
            components.port == nil || components.port == 443
        else { return nil }
        let segments = components.path.split(separator: "/", omittingEmptySubsequences: false)
        guard !segments.contains(where: { $0 == ".." || $0 == "." }), !components.percentEncodedPath.lowercased().contains("%2e%2e") else {
            return nil
        }
        return components.url
    }
}
