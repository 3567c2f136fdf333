/// Where the supervisor puts the routes of the running pipelines: the app listener, or
/// nothing when no listener runs (a benchmark, a test of the runtime alone).
public protocol RouteServing: Sendable {
    /// Swaps every route at once, so a request sees either the old configuration or the new one.
    func replaceRoutes(_ routes: RouteTable)
}
