import Foundation
import NIOCore
import NIOFoundationCompat
import NIOHPACK
import NIOHTTP2
import PushPipeCore
import Synchronization

/// Apple Push Notification service over HTTP/2 with token (.p8) authentication.
final class APNsTransport: Transport, LongRunningStage, ReadinessReporting, ConnectionReporting, Sendable {
    static let summary = "Delivers to APNs over HTTP/2 (token auth, a pool of connections that grows with the load, many streams each)."

    struct Configuration: StageConfiguration {
        var liveActivityTokenKinds: [String]
        var broadcastTokenKinds: [String]
        var teamId: String
        var keyId: String
        var keyPath: String
        var bundleId: String
        var sandbox: Bool
        var baseUrl: String
        var caFile: String
        var connections: Int
        var maxConnections: Int
        @Seconds var idleTimeout: Duration
        var maxStreams: Int
        @Seconds var timeout: Duration
        @Seconds var tokenLifetime: Duration

        /// The `.p8` key and the app: what every APNs stage (this, `apns.channels`) needs.
        static let credentialKeys: [SchemaKey] = [
            .required("team_id", .string, "Apple developer team id (the provider token's issuer)."),
            .required("key_id", .string, "The 10-character id of the .p8 key."),
            .required("key_path", .string, "Path of the .p8 key file (relative to the working directory)."),
            .required("bundle_id", .string, "App bundle id: the topic of alerts; Live Activities use `<bundle>.push-type.liveactivity`."),
        ]

        static let schema = Schema(
            credentialKeys + [
                SchemaKey("sandbox", .boolean, default: false, "Use api.sandbox.push.apple.com (Xcode debug builds)."),
                SchemaKey("base_url", .string, default: "", "Overrides the host, e.g. `https://127.0.0.1:8443` for a stand-in or a proxy."),
                SchemaKey("ca_file", .string, default: "", "PEM file of extra CAs to trust; verification stays on."),
                SchemaKey("connections", .integer, default: 1, in: 1...64, "HTTP/2 connections kept open (opened on first use)."),
                SchemaKey(
                    "max_connections",
                    .integer,
                    default: 4,
                    in: 1...64,
                    "Connections open at most: more open while every stream of the open ones is taken (at least `connections`, at most 64). One "
                        + "connection carries at most `max_streams` per round trip."
                ),
                SchemaKey(
                    "idle_timeout",
                    .duration,
                    default: 60,
                    in: 0.1...Double.infinity,
                    "A connection beyond `connections` that carried nothing for this long closes."
                ),
                SchemaKey(
                    "max_streams",
                    .integer,
                    default: 1000,
                    in: 1...1000,
                    "Streams open at once per connection; more requests wait their turn, and the server's own limit applies too. Over "
                        + "real networks a connection carries at most this many per round trip; next to the server fewer streams cost less "
                        + "bookkeeping."
                ),
                SchemaKey("timeout", .duration, default: 10, "Per-request timeout."),
                SchemaKey(
                    "token_lifetime",
                    .duration,
                    default: 3000,
                    in: 1200...3600,
                    "How long one provider token is reused: APNs accepts a token for at most an hour and a new one every 20 minutes at most."
                ),
                SchemaKey(
                    "live_activity_token_kinds",
                    .list(.string),
                    default: ["push-to-start", "activity-update"],
                    "Token kinds that only take liveactivity pushes (and the only ones that do)."
                ),
                SchemaKey(
                    "broadcast_token_kinds",
                    .list(.string),
                    default: ["broadcast-channel"],
                    "Token kinds whose value is a broadcast channel id (iOS 18): one request updates every Live Activity subscribed to the channel."
                ),
            ]
        )
    }

    static let maximumPayloadBytes = 4096
    static let maximumVoIPPayloadBytes = 5120

    let configuration: Configuration
    let baseURL: URL
    /// `https://host[:port]` and `host[:port]`, built once: URL parsing per request is costly.
    let baseURLText: String
    let authority: String
    let keyPath: String
    let lastUsableStreamID: HTTP2StreamID
    private let state = Mutex<Resources?>(nil)
    private let credentials = CredentialsReadiness(provider: "APNs")
    /// Times one request moves to another connection because its own closed before sending it
    /// (GOAWAY, out of stream ids): it never reached APNs, so this is not a delivery attempt.
    static let maximumHandOvers = 3

    struct Resources: Sendable {
        var pool: HTTP2ConnectionPool
        var token: APNsProviderToken
    }

    init(
        configuration: Configuration,
        context: StageBuildContext,
        lastUsableStreamID: HTTP2StreamID = HTTP2StreamHandler.defaultLastUsableStreamID
    ) throws {
        self.configuration = configuration
        self.lastUsableStreamID = lastUsableStreamID
        let base =
            configuration.baseUrl.isEmpty
            ? (configuration.sandbox ? "https://api.sandbox.push.apple.com" : "https://api.push.apple.com") : configuration.baseUrl
        guard let url = URL(string: base), url.scheme == "https", url.host != nil else {
            throw ConfigurationValueError(keyPath: "base_url", "'\(base)' is not an https URL", expected: "https://host[:port]")
        }
        baseURL = url
        authority = url.port.map { "\(url.host!):\($0)" } ?? url.host!
        baseURLText = "https://\(authority)"
        keyPath = configuration.keyPath
        try CredentialFile.checkAPNsKey(at: keyPath)
    }

    /// Swift's pool: the connections' loops frame and encrypt every request.
    var preferredExecutor: (any TaskExecutor)? { globalConcurrentExecutor }

    func prepare(_ notification: RenderedNotification, context: StageContext) throws -> OutgoingRequest {
        let options = notification.options
        let pushType = options["push_type"]?.stringValue ?? "alert"
        if configuration.broadcastTokenKinds.contains(notification.token.kind) {
            return try prepareBroadcast(notification, pushType: pushType, context: context)
        }
        // Live Activity tokens and device tokens are different things (docs/tokens.md): a
        // liveactivity push goes only to the former, anything else only to the latter.
        // The token goes into the request path, and NIOHTTP2's header validation is off (HTTP2Connection).
        guard !notification.token.value.isEmpty, DeviceToken.isHex(notification.token.value) else {
            throw StageError(.invalidEvent, stage: context.stage, "\(notification.token.masked) is not an APNs token (hexadecimal)")
        }
        let isLiveActivityToken = configuration.liveActivityTokenKinds.contains(notification.token.kind)
        guard isLiveActivityToken == (pushType == "liveactivity") else {
            throw StageError(
                .invalidEvent,
                stage: context.stage,
                "a \(pushType) push cannot go to a \(notification.token.kind) token (\(notification.token.masked))"
            )
        }
        let topic =
            switch pushType {
            case "liveactivity": configuration.bundleId + ".push-type.liveactivity"
            case "voip": configuration.bundleId + ".voip"
            case "complication": configuration.bundleId + ".complication"
            default: configuration.bundleId
            }
        let priority = options["priority"]?.intValue ?? (pushType == "background" ? 5 : 10)
        if pushType == "background" && priority != 5 {
            throw StageError(.invalidEvent, stage: context.stage, "background pushes must use priority 5, not \(priority)")
        }
        // No `apns-id`: APNs makes one and answers with it, and each answer comes on its request's
        // stream. One made here would be one more value to make, encode and send per request.
        var headers: [(name: String, value: String)] = [
            ("apns-push-type", pushType), ("apns-topic", topic), ("apns-priority", String(priority)),
        ]
        if let expiration = options["expiration"]?.intValue { headers.append(("apns-expiration", String(expiration))) }
        if let collapse = options["collapse_id"]?.textValue, !collapse.isEmpty {
            guard collapse.utf8.count <= 64 else {
                throw StageError(.invalidEvent, stage: context.stage, "apns-collapse-id is \(collapse.utf8.count) bytes; APNs allows 64")
            }
            guard !collapse.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
                throw StageError(.invalidEvent, stage: context.stage, "apns-collapse-id contains control characters")
            }
            headers.append(("apns-collapse-id", collapse))
        }
        let url = "\(baseURLText)/3/device/\(notification.token.value)"
        let request = OutgoingRequest(url: url, headers: headers, sending: notification)
        let limit = pushType == "voip" ? Self.maximumVoIPPayloadBytes : Self.maximumPayloadBytes
        guard request.bodyBytes.count <= limit else {
            throw StageError(
                .payloadTooLarge,
                stage: context.stage,
                "payload is \(request.bodyBytes.count) bytes; APNs accepts \(limit) for \(pushType)"
            )
        }
        return request
    }

    func run(context: StageContext) async throws {
        // The key is read at start, so readiness reports a missing or bad key at once, and the
        // log says why the daemon is not ready.
        if context.mode == .live {
            do { _ = try await resources() } catch { context.logger.error("APNs key not loaded, the daemon is not ready until it is: \(error)") }
        }
        // Connections and the key live as long as the pipeline.
        await untilCancelled()
        // A later run (the same stage started again) makes new ones.
        if let resources = state.withLock({ current in
            defer { current = nil }
            return current
        }) {
            await resources.pool.shutdown()
        }
    }

    func send(_ request: OutgoingRequest, context: StageContext) async -> TransportOutcome {
        let (resources, authorization): (Resources, String)
        switch await readyToSend() {
        case .success(let ready): (resources, authorization) = ready
        case .failure(let refusal): return refusal.outcome
        }
        let headers = headers(for: request, authorization: authorization)
        var handOvers = 0
        while true {
            let connection: HTTP2Connection
            do {
                connection = try await resources.pool.connection()
            } catch {
                return cannotConnect(error)
            }
            do {
                let response = try await connection.send(headers: headers, body: ByteBuffer(data: request.bodyBytes), timeout: requestTimeout)
                return outcome(of: response, from: connection, resources: resources)
            } catch HTTP2ConnectionError.closedBeforeSending where handOvers < Self.maximumHandOvers {
                handOvers += 1
            } catch {
                return outcome(of: error, from: connection, resources: resources)
            }
        }
    }

    /// All requests on one connection, answered together: one wait for the batch instead of one
    /// per request. A request its connection closed before sending goes on alone.
    func send(batch requests: [OutgoingRequest], context: StageContext) async -> [TransportOutcome] {
        guard requests.count > 1 else { return requests.isEmpty ? [] : [await send(requests[0], context: context)] }
        let (resources, authorization): (Resources, String)
        switch await readyToSend() {
        case .success(let ready): (resources, authorization) = ready
        case .failure(let refusal): return Array(repeating: refusal.outcome, count: requests.count)
        }
        let connection: HTTP2Connection
        do {
            connection = try await resources.pool.connection(reserving: requests.count)
        } catch {
            return Array(repeating: cannotConnect(error), count: requests.count)
        }
        let results = await connection.send(
            batch: requests.map { (headers(for: $0, authorization: authorization), ByteBuffer(data: $0.bodyBytes)) },
            timeout: requestTimeout
        )
        var outcomes: [TransportOutcome] = []
        outcomes.reserveCapacity(requests.count)
        for (request, result) in zip(requests, results) {
            switch result {
            case .success(let response): outcomes.append(outcome(of: response, from: connection, resources: resources))
            case .failure(HTTP2ConnectionError.closedBeforeSending): outcomes.append(await send(request, context: context))
            case .failure(let error): outcomes.append(outcome(of: error, from: connection, resources: resources))
            }
        }
        return outcomes
    }

    private var requestTimeout: TimeAmount { TimeAmount(configuration.timeout) }

    private struct Refusal: Error {
        var outcome: TransportOutcome
    }

    /// The connections and the current provider token (once per send, or per batch).
    private func readyToSend() async -> Result<(Resources, String), Refusal> {
        let resources: Resources
        do {
            resources = try await self.resources()
        } catch {
            return .failure(Refusal(outcome: .configError(reason: .other("APNs credentials: \(error)"))))
        }
        do {
            return .success((resources, "bearer \(try await resources.token.token())"))
        } catch {
            return .failure(Refusal(outcome: .configError(reason: .other("APNs provider token: \(error)"))))
        }
    }

    private func headers(for request: OutgoingRequest, authorization: String) -> HPACKHeaders {
        var headers = HPACKHeaders()
        headers.reserveCapacity(5 + request.headers.count)
        headers.add(name: ":method", value: "POST")
        headers.add(name: ":scheme", value: "https")
        headers.add(name: ":authority", value: authority)
        // Values that differ per request would only push reusable ones out of the HPACK table.
        headers.add(name: ":path", value: String(request.url.utf8.dropFirst(baseURLText.utf8.count)) ?? "", indexing: .nonIndexable)
        // No `content-type`: APNs takes JSON only and asks for none.
        headers.add(name: "authorization", value: authorization)
        for header in request.headers {
            headers.add(name: header.name, value: header.value, indexing: Self.isPerRequest(header.name) ? .nonIndexable : .indexable)
        }
        return headers
    }

    /// Headers whose values differ per request (a switch: a `Set` hashed every header's name).
    private static func isPerRequest(_ name: String) -> Bool {
        switch name {
        case "apns-id", "apns-expiration", "apns-collapse-id", "apns-request-id": true
        default: false
        }
    }

    private func cannotConnect(_ error: any Error) -> TransportOutcome {
        .retryAfter(seconds: nil, reason: .other("cannot connect to \(baseURL.host ?? ""): \(error)"))
    }

    private func outcome(of answer: HTTP2Answer, from connection: HTTP2Connection, resources: Resources) -> TransportOutcome {
        let response = APNsResponse(answer)
        let (outcome, action) = response.outcome
        switch action {
        case .keep: break
        case .reconnect: resources.pool.retire(connection)
        case .refreshToken:
            if !resources.token.invalidate() {
                return .configError(
                    reason: ProviderReason(
                        code: "ExpiredProviderToken",
                        "APNs keeps answering ExpiredProviderToken to fresh tokens: check the machine's clock"
                    )
                )
            }
        }
        return outcome
    }

    private func outcome(of error: any Error, from connection: HTTP2Connection, resources: Resources) -> TransportOutcome {
        if !connection.isUsable { resources.pool.retire(connection) }
        return .retryAfter(seconds: nil, reason: .other("\(error)"))
    }

    var notReadyReason: String? { credentials.notReadyReason }

    var openConnections: Int {
        state.withLock { $0 }?.pool.openConnections ?? 0
    }

    /// The key is loaded and the pool created when the pipeline starts (or on use after a
    /// failure), never by validation or dry runs (which only check the file's kind: `CredentialFile`).
    private func resources() async throws -> Resources {
        if let existing = state.withLock({ $0 }) { return existing }
        return try await credentials.loading(loadResources)
    }

    private func loadResources() async throws -> Resources {
        guard let data = FileManager.default.contents(atPath: keyPath), let pem = String(data: data, encoding: .utf8) else {
            throw StageError(.unavailable, stage: "transport", "cannot read the .p8 key at key_path")
        }
        let token = try await APNsProviderToken(
            pem: pem,
            keyID: configuration.keyId,
            teamID: configuration.teamId,
            lifetime: configuration.tokenLifetime
        )
        let pool = HTTP2ConnectionPool(
            host: baseURL.host ?? "",
            port: baseURL.port ?? 443,
            keptConnections: configuration.connections,
            maximumConnections: configuration.maxConnections,
            idleTimeout: configuration.idleTimeout,
            readyTimeout: requestTimeout,
            maximumOpenStreams: configuration.maxStreams,
            lastUsableStreamID: lastUsableStreamID,
            tls: try HTTP2ConnectionPool.tlsContext(caFile: configuration.caFile),
            reading: APNsResponse.reading
        )
        return state.withLock { current in
            if let current { return current }
            current = Resources(pool: pool, token: token)
            return current!
        }
    }
}
