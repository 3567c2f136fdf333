import AsyncHTTPClient
import Foundation
import NIOCore
import NIOFoundationCompat
import NIOSSL
import PushPipeCore
import Synchronization

/// Firebase Cloud Messaging HTTP v1, authenticated with a service account's OAuth2 tokens.
final class FCMTransport: Transport, LongRunningStage, ReadinessReporting, Sendable {
    static let summary = "Delivers through FCM HTTP v1 (service-account OAuth2, pooled connections)."

    struct Configuration: StageConfiguration {
        var credentialsFile: String
        var projectId: String
        var baseUrl: String
        var caFile: String
        var validateOnly: Bool
        @Seconds var timeout: Duration

        static let schema = Schema([
            .required("credentials_file", .string, "Service-account JSON file (GOOGLE_APPLICATION_CREDENTIALS)."),
            SchemaKey("project_id", .string, default: "", "Firebase project; from the credentials when empty."),
            SchemaKey("base_url", .string, default: "https://fcm.googleapis.com", "FCM endpoint (or a stand-in)."),
            SchemaKey("ca_file", .string, default: "", "PEM file of extra CAs to trust; verification stays on."),
            SchemaKey("validate_only", .boolean, default: false, "FCM's dry run: validated by FCM, not delivered."),
            SchemaKey("timeout", .duration, default: 10, "Per-request timeout."),
        ])
    }

    static let maximumMessageBytes = 4096

    let configuration: Configuration
    let baseURL: String
    private let resources = Mutex<Resources?>(nil)
    private let credentials = CredentialsReadiness(provider: "FCM")

    struct Resources: Sendable {
        var client: HTTPClient
        var accessToken: GoogleAccessToken
        var projectID: String
    }

    init(configuration: Configuration, context: StageBuildContext) throws {
        guard let url = URL(string: configuration.baseUrl), ["https", "http"].contains(url.scheme ?? ""), url.host != nil else {
            throw ConfigurationValueError(keyPath: "base_url", "'\(configuration.baseUrl)' is not a URL", expected: "https://fcm.googleapis.com")
        }
        try CredentialFile.checkServiceAccount(at: configuration.credentialsFile)
        self.configuration = configuration
        baseURL = configuration.baseUrl.hasSuffix("/") ? String(configuration.baseUrl.dropLast()) : configuration.baseUrl
    }

    /// Swift's pool: the connections' loops frame and encrypt every request.
    var preferredExecutor: (any TaskExecutor)? { globalConcurrentExecutor }

    func prepare(_ notification: RenderedNotification, context: StageContext) throws -> OutgoingRequest {
        guard case .object(var message) = notification.payload else {
            throw StageError(.invalidEvent, stage: context.stage, "an FCM message must be an object")
        }
        message["token"] = .string(notification.token.value)
        var body: [String: JSON] = ["message": .object(message)]
        if configuration.validateOnly { body["validate_only"] = true }
        let project = configuration.projectId.isEmpty ? "{project_id}" : configuration.projectId
        let request = OutgoingRequest(
            method: "POST",
            url: "\(baseURL)/v1/projects/\(project)/messages:send",
            headers: [("content-type", "application/json")],
            body: .object(body),
            token: notification.token
        )
        guard request.bodyBytes.count <= Self.maximumMessageBytes + 64 else {
            throw StageError(
                .payloadTooLarge,
                stage: context.stage,
                "message is \(request.bodyBytes.count) bytes; FCM accepts \(Self.maximumMessageBytes)"
            )
        }
        return request
    }

    func run(context: StageContext) async throws {
        // Loaded at start in a live daemon, so readiness reports missing credentials at once,
        // and the log says why the daemon is not ready.
        if context.mode == .live {
            do { _ = try await resources() } catch {
                context.logger.error("FCM credentials not loaded, the daemon is not ready until they are: \(error)")
            }
        }
        await untilCancelled()
        // A later run (the same stage started again) makes new ones.
        if let existing = resources.withLock({ current in
            defer { current = nil }
            return current
        }) {
            try? await existing.client.shutdown()
        }
    }

    func send(_ request: OutgoingRequest, context: StageContext) async -> TransportOutcome {
        let resources: Resources
        do {
            resources = try await self.resources()
        } catch {
            return .configError(reason: .other("FCM credentials: \(error)"))
        }
        let accessToken: String
        do {
            accessToken = try await resources.accessToken.token()
        } catch {
            return .retryAfter(seconds: nil, reason: .other("\(error)"))
        }
        var http = HTTPClientRequest(url: request.url.replacingOccurrences(of: "{project_id}", with: resources.projectID))
        http.method = .POST
        http.headers.add(name: "authorization", value: "Bearer \(accessToken)")
        http.headers.add(name: "content-type", value: "application/json")
        http.body = .bytes(ByteBuffer(data: request.bodyBytes))
        do {
            let response = try await resources.client.execute(http, timeout: TimeAmount(configuration.timeout))
            let body = try await response.body.collect(upTo: 1 << 20)
            let answer = FCMResponse(
                status: Int(response.status.code),
                body: try? JSON.parse(body.readableBytesView),
                retryAfter: response.headers.first(name: "retry-after").flatMap(Double.init).flatMap { $0.isFinite ? $0 : nil }
            )
            let (outcome, action) = answer.outcome
            if action == .refreshAccessToken { resources.accessToken.invalidate(accessToken) }
            return outcome
        } catch {
            return .retryAfter(seconds: nil, reason: .other("FCM request failed: \(error)"))
        }
    }

    var notReadyReason: String? { credentials.notReadyReason }

    /// Credentials are loaded when the pipeline starts (or on first use), never by validation or
    /// dry runs (which only check the file's kind: `CredentialFile`).
    private func resources() async throws -> Resources {
        if let existing = resources.withLock({ $0 }) { return existing }
        return try await credentials.loading(loadResources)
    }

    private func loadResources() async throws -> Resources {
        let account = try GoogleServiceAccount.load(path: configuration.credentialsFile)
        var tls = TLSConfiguration.makeClientConfiguration()
        if !configuration.caFile.isEmpty { tls.additionalTrustRoots = [.file(configuration.caFile)] }
        var clientConfiguration = HTTPClient.Configuration(tlsConfiguration: tls)
        clientConfiguration.connectionPool = .init(idleTimeout: .seconds(600), concurrentHTTP1ConnectionsPerHostSoftLimit: 16)
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: clientConfiguration)
        let accessToken: GoogleAccessToken
        do {
            accessToken = try await GoogleAccessToken(account: account, client: client)
        } catch {
            // A client must be shut down before it goes away.
            try? await client.shutdown()
            throw error
        }
        let created = Resources(
            client: client,
            accessToken: accessToken,
            projectID: configuration.projectId.isEmpty ? account.projectID : configuration.projectId
        )
        let (winner, loser) = resources.withLock { current -> (Resources, Resources?) in
            if let current { return (current, created) }
            current = created
            return (created, nil)
        }
        if let loser { try? await loser.client.shutdown() }
        return winner
    }
}
