import PushPipeCore

/// Every built-in stage type and route kind. Each kind's folder lists its own, so adding a
/// stage or a route kind touches one folder.
public enum BuiltinStages {
    public static var all: [any Registrable] {
        let stages: [any Registrable] = sources + filters + renderers + transports
        return stages + routes
    }
}
