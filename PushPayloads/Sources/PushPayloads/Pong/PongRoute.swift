import Foundation

/// Where a tap on a Pong notification goes, from `data.url`.
public enum PongRoute: Equatable, Sendable {
    case post(id: String)
    case messages(threadID: String)
    case stats
    /// The app's home screen: `https://pong.college/` or no url.
    case home
    /// A URL that is not Pong's (or not understood): opened nowhere.
    case unknown

    public init(url: String?) {
        guard let url, let components = URLComponents(string: url) else {
            self = url == nil ? .home : .unknown
            return
        }
        guard components.scheme == "https", components.host?.lowercased() == "pong.college", components.user == nil else {
            self = .unknown
            return
        }
        let segments = components.path.split(separator: "/").map(String.init)
        let isIdentifier = { (value: String) in
            !value.isEmpty && value.count <= 64 && value.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }
        }
        switch segments.count {
        case 0: self = .home
        case 1 where segments[0] == "stats": self = .stats
        case 2 where segments[0] == "posts" && isIdentifier(segments[1]): self = .post(id: segments[1])
        case 2 where segments[0] == "messages" && isIdentifier(segments[1]): self = .messages(threadID: segments[1])
        default: self = .unknown
        }
    }
}
