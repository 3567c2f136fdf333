/// The routes of all running pipelines. Swapped whole on reload, so a request sees either
/// the old configuration or the new one, never a mix.
public struct RouteTable: Sendable {
    public struct Entry: Sendable {
        public var route: RouteDefinition
        public var context: RouteContext
    }

    public private(set) var entries: [Entry] = []

    public init(_ entries: [Entry] = []) { self.entries = entries }

    /// Literal segments win over parameters (`/users/me` before `/users/:id`): the order is
    /// settled here, once, not on every request.
    public mutating func add(_ route: RouteDefinition, context: RouteContext) {
        entries.append(Entry(route: route, context: context))
        entries.sort { $0.route.parameterCount < $1.route.parameterCount }
    }

    public enum Lookup {
        case found(Entry, parameters: [String: String])
        case methodNotAllowed(allowed: [String])
        case notFound
    }

    public func lookup(method: String, path: String) -> Lookup {
        let segments = path.split(separator: "/")
        var allowed: [String] = []
        for entry in entries {
            guard let parameters = entry.route.match(segments) else { continue }
            if entry.route.method == method || (method == "HEAD" && entry.route.method == "GET") {
                return .found(entry, parameters: parameters)
            }
            allowed.append(entry.route.method)
        }
        return allowed.isEmpty ? .notFound : .methodNotAllowed(allowed: Array(Set(allowed)).sorted())
    }
}
