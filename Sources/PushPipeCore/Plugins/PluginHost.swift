/// Makes the stages that plugins serve. The core reads and validates manifests; how a stage
/// talks to its plugin (a child process, in PushPipePlugins) is the host's.
public protocol PluginHost: Sendable {
    /// A new stage of `manifest`'s kind for one place in one pipeline, with its validated
    /// configuration (the `type` key removed).
    func makeStage(_ manifest: PluginManifest, configuration: JSON, context: StageBuildContext) throws -> AnyStage
}

/// A pipeline uses a plugin in a program that was given no plugin host.
public struct PluginHostMissing: Error, Sendable, CustomStringConvertible {
    public var plugin: String
    public var description: String { "plugin '\(plugin)' cannot run here: this program has no plugin host" }
}
