import Foundation
import Logging
import PushPipeCore
import PushPipeSQLite
import PushPipeStages
import Testing

/// pipelines/pong.yaml renders, for Pong's original example, the very message the Firebase
/// Admin SDK sends (`Tests/PushPipeStagesTests/Fixtures/fcm-v1-send-request-seed.exact.json`), compared as JSON.
@Suite struct FCMFixtureTests {
    @Test func pongExampleEqualsTheAdminSDKMessage() async throws {
        let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let loader = ConfigLoader(builtins: BuiltinStages.all, interpolation: EnvironmentInterpolation(environment: [:], allowsUndefined: true))
        let loaded = await loader.load(pipelineFiles: [repository.appendingPathComponent("pipelines/pong.yaml").path], pluginsDirectory: nil)
        let definition = try #require(loaded.pipelines.first)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("fixture-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try SQLiteStore(path: "\(directory)/state.sqlite")
        try await store.pipeline(definition.name).register(
            DeviceToken(user: "62cc403b99efc110a9a73a55", kind: "fcm", value: "YOUR_REGISTRATION_TOKEN"),
            environment: nil,
            replace: false
        )
        let event = try EventInput.event(
            from: [
                "id": "62505215624257b417055bc4", "user": "62cc403b99efc110a9a73a55", "time": "2022-04-08T15:17:41.900560Z",
                "body": [
                    "user": "62cc403b99efc110a9a73a55", "type": "like", "resource": "/posts/DKJWDO3820NKKDHW2920EN",
                    "title": "$GOOG up 1.43% on the day", "body": "$GOOG gained 11.80 points to close at 835.67, up 1.43% on the day.",
                ],
            ],
            pipeline: definition.name
        )
        let context = StageContext(pipeline: definition.name, stage: "renderer", store: store, logger: Logger(label: "fixture"), mode: .dryRun)
        let notification = try #require(try await definition.renderer.stage.render(event, context: context).first)
        let request = try definition.transport.stage.prepare(notification, context: context)
        let fixture = try JSON.parse(
            try Data(
                contentsOf: try #require(
                    Bundle.module.url(
                        forResource: "fcm-v1-send-request-seed.exact",
                        withExtension: "json",
                        subdirectory: "Fixtures"
                    )
                )
            )
        )
        #expect(request.body == fixture)
        try await store.close()
    }
}
