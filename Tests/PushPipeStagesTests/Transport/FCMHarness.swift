import Foundation
import Logging
import PushPipeCore
import PushPipeSQLite
import PushPipeStages
import PushPipeTesting
import _CryptoExtras

/// A Pong-like pipeline with the real `fcm` transport against the FCM + OAuth stand-in.
struct FCMHarness {
    let directory: TemporaryDirectory
    let standIn: FCMStandIn
    let store: SQLiteStore
    let definition: PipelineDefinition

    static let project = "pong-test"
    static let email = "pushpipe@pong-test.iam.gserviceaccount.com"

    static func make(validateOnly: Bool = false) async throws -> FCMHarness {
        let directory = try TemporaryDirectory("fcm")
        let key = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        let authority = try TestCertificateAuthority()
        try authority.writeCACertificate(to: directory.file("ca.pem"))
        let standIn = try await FCMStandIn.start(publicKey: key.publicKey, clientEmail: email, authority: authority)
        try directory.write(
            "service-account.json",
            FCMStandIn.serviceAccount(
                privateKey: key,
                clientEmail: email,
                projectID: project,
                tokenURI: standIn.tokenURI
            )
        )
        let file = try directory.write(
            "pong.yaml",
            """
            pipeline: pong-test
            sources:
              - {type: http.event, path: /events}
            filters:
              - type: settings.enabled
            renderer:
              type: fcm.message
              notification: {title: "{{title}}", body: "{{body}}"}
              data:
                id: "{{event.id}}"
                type: {$from: type, $default: generic}
                count: {$from: count}
            transport:
              type: fcm
              credentials_file: \(directory.file("service-account.json"))
              base_url: \(standIn.baseURL)
              ca_file: \(directory.file("ca.pem"))
              validate_only: \(validateOnly)
            delivery: {attempts: 3, backoff: 10ms, max_backoff: 50ms}
            """
        )
        let result = await ConfigLoader(builtins: BuiltinStages.all, interpolation: EnvironmentInterpolation(environment: [:]))
            .load(pipelineFiles: [file], pluginsDirectory: nil)
        guard let definition = result.pipelines.first else { throw ConfigurationError(result.diagnostics) }
        let store = try SQLiteStore(path: directory.file("state.sqlite"))
        try await store.pipeline(definition.name).register(
            DeviceToken(user: "alice", kind: "fcm", value: "fcm-token-alice"),
            environment: nil,
            replace: false
        )
        return FCMHarness(directory: directory, standIn: standIn, store: store, definition: definition)
    }

    func run<T: Sendable>(_ body: @Sendable (EventProcessor) async throws -> T) async throws -> T {
        let logger = Logger(label: "fcm-test")
        let processor = EventProcessor(definition: definition, store: store, logger: logger, mode: .live)
        return try await definition.withRunningStages(store: store, logger: logger, mode: .live) { try await body(processor) }
    }

    func event(user: String = "alice", _ body: JSON = ["title": "Hi", "body": "there", "type": "upvote", "count": 3]) -> Event {
        Event(pipeline: definition.name, user: user, body: body)
    }

    func close() async {
        try? await store.close()
        await standIn.stop()
        directory.remove()
    }

    static func with(validateOnly: Bool = false, _ body: (FCMHarness) async throws -> Void) async throws {
        let harness = try await make(validateOnly: validateOnly)
        try await withCleanup({ try await body(harness) }, cleanup: harness.close)
    }
}
