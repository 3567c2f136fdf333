import AsyncHTTPClient
import Crypto
import Foundation
import NIOCore
import NIOFoundationCompat
import NIOHPACK
import PushPipeCore
import Synchronization

/// Web Push (RFC 8030): each subscription names its push service's endpoint; the message is
/// encrypted for the browser (RFC 8291) and signed for the service (RFC 8292 VAPID).
final class WebPushTransport: Transport, LongRunningStage, ReadinessReporting, TokenValidator, Sendable {
    static let summary = "Delivers to browsers by Web Push (RFC 8030), encrypted (RFC 8291) and VAPID-signed (RFC 8292)."

    struct Configuration: StageConfiguration {
        var vapidKeyPath: String
        var subject: String
        @Seconds var ttl: Duration
        var urgency: String
        var caFile: String
        @Seconds var timeout: Duration
        var allowedOrigins: [String]

        static let schema = Schema([
            .required("vapid_key_path", .string, "PEM file of the VAPID key pair (`pushpipe vapid generate`)."),
            .required("subject", .string, "`mailto:` or `https:` contact the push services may use (RFC 8292 `sub`)."),
            SchemaKey(
                "ttl",
                .duration,
                default: 86400,
                in: 0...longestTTL,
                "How long a push service keeps an undelivered message (`TTL`); the renderer's `ttl` wins."
            ),
            SchemaKey("urgency", .oneOf(["very-low", "low", "normal", "high"]), default: "normal", "`Urgency`; the renderer's `urgency` wins."),
            SchemaKey("ca_file", .string, default: "", "PEM file of extra CAs to trust (a stand-in); verification stays on."),
            SchemaKey("timeout", .duration, default: 10, "Per-request timeout."),
            SchemaKey(
                "allowed_origins",
                .list(.string),
                default: [],
                "Push-service origins a subscription may name (`https://fcm.googleapis.com`, `https://*.push.apple.com`); empty: any public https "
                    + "origin. Loopback, private and link-local addresses are refused either way (`--allow-private-endpoint`)."
            ),
        ])
    }

    /// 30 days: the most a push service is asked to keep a message.
    static let longestTTL: Double = 2_592_000
    static let urgencies: Set<String> = ["very-low", "low", "normal", "high"]
    /// Times a request its connection closed before sending it goes to a new one.
    static let maximumHandOvers = 2

    let configuration: Configuration
    /// Connections kept per push service (FCM's, Mozilla's, Apple's...), over HTTP/2 where the
    /// service offers it, behind the egress policy (endpoints are URLs users chose).
    let pools: EgressHTTP2Pools
    /// The process's HTTP/1.1 client for these CAs, behind the same policy: for services that
    /// do not offer h2.
    let client: EgressHTTPClient
    private let signer = Mutex<VAPIDSigner?>(nil)
    private let subscriptions: WebPushSubscriptionCache
    private let credentials = CredentialsReadiness(provider: "Web Push")

    init(configuration: Configuration, context: StageBuildContext) throws {
        guard configuration.subject.hasPrefix("mailto:") || configuration.subject.hasPrefix("https:") else {
            throw ConfigurationValueError(
                keyPath: "subject",
                "'\(configuration.subject)' is not a contact",
                expected: "mailto:ops@example.com or https://example.com"
            )
        }
        for (index, pattern) in configuration.allowedOrigins.enumerated() {
            let host = pattern.hasPrefix("https://*.") ? "https://x." + pattern.dropFirst("https://*.".count) : pattern
            guard pattern.hasPrefix("https://"), EgressPolicy.origin(of: host) != nil, !pattern.dropFirst(8).contains("/") else {
                throw ConfigurationValueError(
                    keyPath: "allowed_origins[\(index)]",
                    "'\(pattern)' is not an https origin",
                    expected: "https://host[:port] or https://*.domain"
                )
            }
        }
        self.configuration = configuration
        let policy = context.egress.allowing(origins: configuration.allowedOrigins)
        client = EgressHTTPClient(policy: policy, trusting: configuration.caFile)
        subscriptions = WebPushSubscriptionCache(policy: policy)
        pools = try EgressHTTP2Pools(
            policy: policy,
            caFile: configuration.caFile,
            reading: WebPushResponse.reading,
            readyTimeout: TimeAmount(configuration.timeout)
        )
    }

    var preferredExecutor: (any TaskExecutor)? { globalConcurrentExecutor }
    /// Every subscription names its own push service: anyone can run one.
    var destinationsAreUserChosen: Bool { true }

    /// The request in clear (what a dry run shows); `send` encrypts the body for the subscription.
    func prepare(_ notification: RenderedNotification, context: StageContext) throws -> OutgoingRequest {
        let subscription: WebPushSubscription
        do {
            subscription = try subscriptions.entry(for: notification.token.value).subscription
        } catch {
            throw StageError(.invalidEvent, stage: context.stage, "\(notification.token.masked) is not a Web Push subscription: \(error)")
        }
        let options = notification.options
        let ttl = options["ttl"].map { $0 == .null ? configuration.ttl.inSeconds : $0.doubleValue ?? .nan } ?? configuration.ttl.inSeconds
        // From the event: a number the header cannot hold (1e300, "inf") fails this event, not the daemon.
        guard ttl.isFinite, (0...Self.longestTTL).contains(ttl) else {
            throw StageError(
                .invalidEvent,
                stage: context.stage,
                "ttl \(options["ttl"]?.compactText ?? "\(ttl)") is not a number of seconds from 0 to \(Int(Self.longestTTL)) (30 days)"
            )
        }
        let urgency = options["urgency"]?.stringValue ?? configuration.urgency
        // From the event (a template): only RFC 8030's words reach the header.
        guard Self.urgencies.contains(urgency) else {
            throw StageError(.invalidEvent, stage: context.stage, "urgency '\(urgency.prefix(40))' is not very-low, low, normal or high")
        }
        var headers: [(name: String, value: String)] = [
            ("ttl", String(Int(ttl))), ("urgency", urgency),
            ("content-encoding", "aes128gcm"), ("content-type", "application/octet-stream"),
        ]
        if let topic = options["topic"]?.textValue, !topic.isEmpty {
            guard topic.utf8.count <= 32, topic.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }) else {
                throw StageError(.invalidEvent, stage: context.stage, "topic '\(topic)' is not at most 32 base64url characters")
            }
            headers.append(("topic", topic))
        }
        let request = OutgoingRequest(
            method: "POST",
            url: subscription.endpoint,
            headers: headers,
            body: notification.payload,
            token: notification.token
        )
        guard request.bodyBytes.count <= WebPushEncryption.maximumPlaintextBytes else {
            throw StageError(
                .payloadTooLarge,
                stage: context.stage,
                "payload is \(request.bodyBytes.count) bytes; a push service must take \(WebPushEncryption.maximumPlaintextBytes) once encrypted"
            )
        }
        return request
    }

    /// The key is read at start in a live daemon, so readiness reports a missing one at once.
    func run(context: StageContext) async throws {
        if context.mode == .live { _ = try? await vapidSigner() }
        await untilCancelled()
        await pools.shutdown()
    }

    func send(_ request: OutgoingRequest, context: StageContext) async -> TransportOutcome {
        let signer: VAPIDSigner
        do {
            signer = try await vapidSigner()
        } catch {
            return Self.keyMissing(error)
        }
        switch sealing(request, signer: signer) {
        case .success(let (sealed, origin)):
            // One deadline for the whole send: the connection, the stream, a hand-over, HTTP/1.1.
            return await deliver(sealed, origin: origin, deadline: NIODeadline.now() + TimeAmount(configuration.timeout))
        case .failure(let refused):
            return refused.outcome
        }
    }

    /// A batch's requests to one push service share one hand-over to its connection and one
    /// wait for their answers, as APNs's do: a stream's continuation and hop to the event loop
    /// per message cost more than its framing. What the batch cannot carry (a service without
    /// h2, a request its connection closed before sending) goes on alone; a service with no
    /// connection within the batch's one deadline fails its own messages only.
    func send(batch requests: [OutgoingRequest], context: StageContext) async -> [TransportOutcome] {
        guard requests.count > 1 else { return requests.isEmpty ? [] : [await send(requests[0], context: context)] }
        let signer: VAPIDSigner
        do {
            signer = try await vapidSigner()
        } catch {
            return Array(repeating: Self.keyMissing(error), count: requests.count)
        }
        let deadline = NIODeadline.now() + TimeAmount(configuration.timeout)
        var outcomes = [TransportOutcome?](repeating: nil, count: requests.count)
        var byOrigin: [String: [Pending]] = [:]
        for (index, result) in await sealing(requests, signer: signer).enumerated() {
            switch result {
            case .success(let (sealed, origin)): byOrigin[origin, default: []].append(Pending(index: index, sealed: sealed))
            case .failure(let refused): outcomes[index] = refused.outcome
            }
        }
        // Every service at once: one that stalls (anyone can run one) holds its own messages
        // only. One service's batch alone (the usual case) needs no task of its own.
        var sends: [@Sendable () async -> [(Int, TransportOutcome)]] = []
        for (origin, group) in byOrigin {
            if group.count > 1 {
                sends.append { await self.sendTogether(group, origin: origin, deadline: deadline) }
            } else {
                for pending in group {
                    sends.append { [(pending.index, await self.deliver(pending.sealed, origin: origin, deadline: deadline))] }
                }
            }
        }
        if sends.count == 1 {
            for (index, outcome) in await sends[0]() { outcomes[index] = outcome }
        } else {
            await withTaskGroup(of: [(Int, TransportOutcome)].self) { group in
                for send in sends { group.addTask(operation: send) }
                for await sent in group {
                    for (index, outcome) in sent { outcomes[index] = outcome }
                }
            }
        }
        return outcomes.map { $0 ?? .retryAfter(seconds: nil, reason: .other("push service request was not made")) }
    }

    /// One service's messages of a batch on its connection; those it closed before sending go
    /// on alone (one hand-over counted), and a service that did not choose h2 gets HTTP/1.1.
    /// Routed here, just before its connection is asked for: routed for every service of a
    /// batch first, a batch of more services than are kept would let go of the first ones'.
    private func sendTogether(_ group: [Pending], origin: String, deadline: NIODeadline) async -> [(Int, TransportOutcome)] {
        var outcomes: [(Int, TransportOutcome)] = []
        var alone: [Pending] = []
        let target = group[0].sealed.target
        if case .http2(let pool) = pools.route(origin: origin, host: target.host, port: target.port) {
            do {
                let connection = try await pool.connection(reserving: group.count, deadline: deadline)
                let timeout = try Self.remaining(until: deadline, releasing: group.count, on: connection)
                let results = await connection.send(batch: group.map { ($0.sealed.http2Headers, $0.sealed.body) }, timeout: timeout)
                for (pending, result) in zip(group, results) {
                    switch result {
                    case .success(let answer): outcomes.append((pending.index, Self.outcome(of: answer, origin: origin)))
                    case .failure(HTTP2ConnectionError.closedBeforeSending): alone.append(pending)
                    case .failure(let error): outcomes.append((pending.index, Self.outcome(of: error)))
                    }
                }
            } catch HTTP2ConnectionError.closedBeforeSending {
                // The pool was let go meanwhile: each routes again.
                alone = group
            } catch HTTP2ConnectionError.http2NotOffered {
                pools.useHTTP1(for: origin)
                alone = group
            } catch {
                // No connection within the deadline: what the single path would say, without a second try.
                return group.map { ($0.index, Self.outcome(of: error)) }
            }
        } else {
            alone = group
        }
        guard !alone.isEmpty else { return outcomes }
        return await withTaskGroup(of: (Int, TransportOutcome).self) { sends in
            for pending in alone {
                sends.addTask { (pending.index, await self.deliver(pending.sealed, origin: origin, deadline: deadline, handOvers: 1)) }
            }
            for await sent in sends { outcomes.append(sent) }
            return outcomes
        }
    }

    /// A sealed request of a batch and where it came in the batch.
    private struct Pending: Sendable {
        var index: Int
        var sealed: Sealed
    }

    private struct Refused: Error {
        var outcome: TransportOutcome
    }

    private static func keyMissing(_ error: any Error) -> TransportOutcome {
        .configError(reason: .other("VAPID key: \(error)"))
    }

    /// Messages encrypted together, at most this many one after the other: a broadcast's page
    /// (thousands) is spread over the cores, and a worker's usual batch costs no task per message.
    static let sealedInSequence = 32

    /// Every request sealed (`sealing(_:signer:)`), in order; a long batch in parallel chunks.
    private func sealing(_ requests: [OutgoingRequest], signer: VAPIDSigner) async -> [Result<(Sealed, String), Refused>] {
        guard requests.count > Self.sealedInSequence else { return requests.map { sealing($0, signer: signer) } }
        return await withTaskGroup(of: (Int, [Result<(Sealed, String), Refused>]).self) { group in
            for start in stride(from: 0, to: requests.count, by: Self.sealedInSequence) {
                let chunk = requests[start..<min(requests.count, start + Self.sealedInSequence)]
                group.addTask { (start, chunk.map { self.sealing($0, signer: signer) }) }
            }
            var results = [Result<(Sealed, String), Refused>?](repeating: nil, count: requests.count)
            for await (start, chunk) in group {
                for (offset, result) in chunk.enumerated() { results[start + offset] = result }
            }
            return results.map { $0! }
        }
    }

    /// The request encrypted and signed, with its endpoint's origin as the egress policy judged
    /// it; or what its send comes to when that cannot be.
    private func sealing(_ request: OutgoingRequest, signer: VAPIDSigner) -> Result<(Sealed, String), Refused> {
        let sealed: Sealed
        do {
            sealed = try seal(request, signer: signer)
        } catch {
            return .failure(Refused(outcome: .dropToken(reason: .other("the subscription's keys are not usable: \(error)"), since: nil)))
        }
        switch sealed.checkedOrigin {
        case .success(let origin): return .success((sealed, origin))
        case .failure(let refusal): return .failure(Refused(outcome: Self.outcome(of: refusal)))
        }
    }

    /// One sealed request over its origin's HTTP/2 connection, or over HTTP/1.1.
    private func deliver(_ sealed: Sealed, origin: String, deadline: NIODeadline, handOvers: Int = 0) async -> TransportOutcome {
        do {
            if let outcome = try await sendOverHTTP2(sealed, origin: origin, deadline: deadline, handOvers: handOvers) { return outcome }
            let answer = try await client.execute(sealed.http1Request, timeout: try Self.remaining(until: deadline))
            return WebPushResponse(
                status: answer.status,
                location: answer.headers.first(name: "location"),
                retryAfter: answer.headers.first(name: "retry-after").flatMap(Double.init),
                code: WebPushResponse.code(in: answer.body)
            ).outcome
        } catch {
            return Self.outcome(of: error)
        }
    }

    /// An HTTP/2 answer's outcome; a redirect is refused, not followed.
    private static func outcome(of answer: HTTP2Answer, origin: String) -> TransportOutcome {
        if (300..<400).contains(answer.status) {
            return outcome(of: EgressRefusal(.redirect, origin: origin, "answered \(answer.status) with a redirect, which is not followed"))
        }
        return WebPushResponse(answer).outcome
    }

    /// What a failed send comes to.
    private static func outcome(of error: any Error) -> TransportOutcome {
        if let refusal = error as? EgressRefusal {
            // A name that does not resolve may again; an endpoint inside the operator's network,
            // or one that redirects, is no push service: the subscription goes.
            if refusal.code == .unresolvable {
                return .retryAfter(seconds: nil, reason: ProviderReason(code: "\(refusal.code)", refusal.description))
            }
            return .dropToken(reason: ProviderReason(code: "\(refusal.code)", refusal.description), since: nil)
        }
        return .retryAfter(seconds: nil, reason: .other("push service request failed: \(WebPushResponse.describe(error))"))
    }

    /// One stream on the origin's connection; nil when the origin speaks HTTP/1.1 only. A
    /// request its connection closed before sending (GOAWAY, the pool let go) goes to the
    /// origin's connection again, twice at most; all within the send's deadline.
    private func sendOverHTTP2(_ sealed: Sealed, origin: String, deadline: NIODeadline, handOvers used: Int) async throws -> TransportOutcome? {
        var handOvers = used
        while case .http2(let pool) = pools.route(origin: origin, host: sealed.target.host, port: sealed.target.port) {
            do {
                _ = try Self.remaining(until: deadline)
                let connection = try await pool.connection(deadline: deadline)
                let timeout = try Self.remaining(until: deadline, releasing: 1, on: connection)
                let answer = try await connection.send(headers: sealed.http2Headers, body: sealed.body, timeout: timeout)
                return Self.outcome(of: answer, origin: origin)
            } catch HTTP2ConnectionError.closedBeforeSending where handOvers < Self.maximumHandOvers {
                handOvers += 1
            } catch HTTP2ConnectionError.http2NotOffered {
                // HTTP/1.1 now, and for an hour (even if the origin made way for others meanwhile).
                pools.useHTTP1(for: origin)
                return nil
            }
        }
        return nil
    }

    /// What is left of a send's time for requests reserved on `connection`; when nothing is, the
    /// reservation is given back (a send gives it back when answered) and `timedOut` thrown.
    private static func remaining(until deadline: NIODeadline, releasing reserved: Int, on connection: HTTP2Connection) throws -> TimeAmount {
        do {
            return try remaining(until: deadline)
        } catch {
            connection.gauge.remove(reserved)
            throw error
        }
    }

    /// What is left of a send's time; throws `timedOut` when nothing is.
    private static func remaining(until deadline: NIODeadline) throws -> TimeAmount {
        let left = deadline - .now()
        guard left > .zero else { throw HTTP2ConnectionError.timedOut }
        return left
    }

    /// A request encrypted for its subscription and signed for its push service.
    struct Sealed: Sendable {
        var url: String
        var checkedOrigin: Result<String, EgressRefusal>
        var target: WebPushSubscriptionCache.Target
        var headers: [(name: String, value: String)]
        var body: ByteBuffer

        var http2Headers: HPACKHeaders {
            var fields = HPACKHeaders()
            fields.reserveCapacity(headers.count + 5)
            fields.add(name: ":method", value: "POST")
            fields.add(name: ":scheme", value: "https")
            fields.add(name: ":authority", value: target.authority)
            // A subscription's own path, or an event's TTL or topic, would only push the reusable
            // fields (the VAPID header, kept for hours) out of the HPACK table.
            fields.add(name: ":path", value: target.path, indexing: .nonIndexable)
            for header in headers {
                fields.add(name: header.name, value: header.value, indexing: Self.isPerMessage(header.name) ? .nonIndexable : .indexable)
            }
            fields.add(name: "content-length", value: String(body.readableBytes), indexing: .nonIndexable)
            return fields
        }

        /// Fields whose values an event may set per message (a switch: a `Set` would hash every name).
        static func isPerMessage(_ name: String) -> Bool {
            switch name {
            case "ttl", "topic": true
            default: false
            }
        }

        var http1Request: HTTPClientRequest {
            var http = HTTPClientRequest(url: url)
            http.method = .POST
            for header in headers { http.headers.add(name: header.name, value: header.value) }
            http.body = .bytes(body)
            return http
        }
    }

    /// The body encrypted for the subscription's keys, and the VAPID header for its origin.
    func seal(_ request: OutgoingRequest, signer: VAPIDSigner) throws -> Sealed {
        let subscription = try subscriptions.entry(for: request.token.value)
        let encryption = try subscription.encryption.get()
        guard let origin = subscription.origin, let target = subscription.target else {
            throw WebPushSubscription.Invalid(field: "endpoint", "not an https URL")
        }
        var headers = request.headers
        headers.append(("authorization", try signer.authorization(for: origin)))
        return Sealed(
            url: subscription.subscription.endpoint,
            checkedOrigin: subscription.checkedOrigin,
            target: target,
            headers: headers,
            body: ByteBuffer(data: try encryption.encrypt(request.bodyBytes))
        )
    }

    var notReadyReason: String? { credentials.notReadyReason }

    /// A subscription's key must be a point on P-256 (the register route checks its form only):
    /// refused at registration rather than pruned at its first send.
    func validate(_ token: DeviceToken) throws {
        guard token.value.utf8.first == UInt8(ascii: "{"), let subscription = try? WebPushSubscription(stored: token.value) else { return }
        do {
            _ = try client.policy.check(url: subscription.endpoint)
        } catch {
            throw TokenRejected(field: "endpoint", "is not a push service this daemon sends to (\(error.code.rawValue): \(error.detail))")
        }
        do {
            _ = try WebPushEncryption(p256dh: subscription.p256dh, auth: subscription.auth)
        } catch let invalid as WebPushEncryption.InvalidKey {
            throw TokenRejected(field: invalid.field, "is not a valid Web Push key (a point on P-256, a 16-byte secret)")
        }
    }

    /// Read on first use and kept; a key that failed to load is read again next time.
    private func vapidSigner() async throws -> VAPIDSigner {
        if let existing = signer.withLock({ $0 }) { return existing }
        let loaded = try await credentials.loading {
            VAPIDSigner(key: try VAPIDKeyFile.read(path: configuration.vapidKeyPath), subject: configuration.subject)
        }
        return signer.withLock { current in
            if let current { return current }
            current = loaded
            return loaded
        }
    }
}
