/// The routes of all running pipelines. Swapped whole on reload, so a request sees either
/// the old configuration or the new one, never a mix.
public struct RouteTable: Sendable {
    public struct Entry: Sendable {
        public var route: RouteDefinition
        public var context: RouteContext
    }

    public private(set) var entries: [Entry] = []
    /// Routes without parameters by their path as `/a/b` (every request to one of them, the
    /// usual case, is found without matching it against each route).
    private var literal: [String: [Entry]] = [:]

    public init() {}

    /// Literal segments win over parameters (`/users/me` before `/users/:id`): the order is
    /// settled here, once, not on every request.
    public mutating func add(_ route: RouteDefinition, context: RouteContext) {
        let entry = Entry(route: route, context: context)
        entries.append(entry)
        entries.sort { $0.route.parameterCount < $1.route.parameterCount }
        if route.parameterCount == 0 { literal["/" + route.segments.joined(separator: "/"), default: []].append(entry) }
    }

    public enum Lookup {
        case found(Entry, parameters: [String: String])
        case methodNotAllowed(allowed: [String])
        case notFound
    }

    public func lookup(method: String, path: String) -> Lookup {
        // A literal route with this method is the answer the scan below would give: routes
        // without parameters come first, and no two serve one method and path. Not for HEAD,
        // which the scan gives to a GET route too.
        if method != "HEAD", let found = literal[path]?.first(where: { $0.route.method == method }) { return .found(found, parameters: [:]) }
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
