import PushPipeCore

/// Every built-in stage type. Each kind's folder lists its own stages, so adding a stage
/// touches one folder.
public enum BuiltinStages {
    public static var all: [StageDescriptor] { sources + filters + renderers + transports }
}
