import PushPipeCore

extension BuiltinStages {
    /// Route kinds with provider code behind them; the core has the generic ones (`register`, …).
    static var routes: [RouteAction] {
        [APNsChannelsRoutes.action]
    }
}
