import PushPipeCore
import PushPipeTesting

@testable import PushPipeStages

/// A pipeline file written into `directory` and loaded with the built-in stages, as the
/// daemon loads it.
func loadPipeline(_ yaml: String, in directory: TemporaryDirectory) async throws -> PipelineDefinition {
    let file = try directory.write("pipeline.yaml", yaml)
    let loaded = await ConfigLoader(builtins: BuiltinStages.all, interpolation: EnvironmentInterpolation(environment: [:]))
        .load(pipelineFiles: [file], pluginsDirectory: nil)
    guard let definition = loaded.pipelines.first else { throw ConfigurationError(loaded.diagnostics) }
    return definition
}

extension TimestampDedupeFilter {
    /// The games filter of the OGS pipeline (`games`, `last_move`, `game_id`, state `moves`) as
    /// a pipeline file configures it, with `options` (`, hold: 3s`) after those keys.
    static func games(_ options: String = "", in directory: TemporaryDirectory) async throws -> TimestampDedupeFilter {
        let definition = try await loadPipeline(
            """
            pipeline: turns
            sources: [{type: http.event, path: /events}]
            filters: [{type: dedupe.timestamp, items: games, timestamp: last_move, item_id: game_id, state: moves\(options)}]
            renderer: {type: json.template, payload: {}}
            transport: {type: stdout}
            """,
            in: directory
        )
        guard let filter = definition.filters.first?.stage as? TimestampDedupeFilter else { throw ConfigurationError([]) }
        return filter
    }
}
