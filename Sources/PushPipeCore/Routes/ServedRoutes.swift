/// What one `routes:` entry serves: its routes, and what runs beside them for the pipeline's
/// life (a client its handlers share, closed when the pipeline stops).
public struct ServedRoutes: Sendable {
    public var routes: [RouteDefinition]
    public var service: (any LongRunningStage)?

    public init(routes: [RouteDefinition], service: (any LongRunningStage)? = nil) {
        self.routes = routes
        self.service = service
    }
}
