import PushPipe
@testable import PushPipeStages
import PushPipeTesting

/// A pipeline file written into `directory` and loaded with the built-in stages, as the
/// daemon loads it.
func loadPipeline(_ yaml: String, in directory: TemporaryDirectory) async throws -> PipelineDefinition {
    let file = try directory.write("pipeline.yaml", yaml)
    let loaded = await ConfigLoader(builtins: BuiltinStages.all, interpolation: EnvironmentInterpolation(environment: [:]))
        .load(pipelineFiles: [file], pluginsDirectory: nil)
    guard let definition = loaded.pipelines.first else { throw ConfigurationError(loaded.diagnostics) }
    return definition
}
