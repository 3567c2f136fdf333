/// What a module adds to a registry: a stage type (`StageDescriptor`) or a kind of route
/// (`RouteAction`). `BuiltinStages.all` and a plugin host's stages are lists of them.
public protocol Registrable: Sendable {
    func register(in registry: inout StageRegistry)
}

extension StageDescriptor: Registrable {
    public func register(in registry: inout StageRegistry) { registry.register(self) }
}

extension RouteAction: Registrable {
    public func register(in registry: inout StageRegistry) { registry.register(self) }
}
