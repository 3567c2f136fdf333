import Crypto
import Foundation
import NIOCore
import NIOFoundationCompat
import NIOHPACK
import NIOHTTP2
import NIOPosix
import NIOSSL
import PushPipeCore

/// An in-process APNs: HTTP/2 over TLS on 127.0.0.1, checking requests by Apple's rules and
/// answering the way APNs does (including with the errors a test scripts).
public final class APNsStandIn: Sendable {
    public struct Request: Sendable {
        public var path: String
        public var token: String
        public var headers: [String: String]
        public var body: JSON?
        public var bodySize: Int
        /// The provider token's `iat`, when the token verified.
        public var tokenIssuedAt: Int?
        public var authorization: String
        /// What was wrong with the request, in APNs reasons; empty when it was valid.
        public var rejection: String?
        /// The `apns-id` of the answer: the request's, else one made here, as APNs does.
        public var apnsID: String
        /// When the whole request had arrived (latency benchmarks).
        public var receivedAt = ContinuousClock.now
    }

    /// How to answer the next request(s).
    public indirect enum Answer: Sendable {
        case accept
        case reject(status: Int, reason: String, timestamp: Int64? = nil)
        /// GOAWAY on the connection with `{"reason": ...}`, then close it (the stream is unanswered).
        case goAway(reason: String)
        /// Answer after a delay (slow APNs).
        case delayed(Duration, Answer)
        /// Answer once the test opens the gate (an answer that must come after a step of the test).
        case held(Gate, Answer)
        /// Any status with these headers and body (the channel-management API's answers).
        case respond(status: Int, headers: [String: String], body: JSON?)
    }

    public struct Credentials: Sendable {
        public var teamID: String
        public var keyID: String
        public var publicKey: P256.Signing.PublicKey
        public init(teamID: String, keyID: String, publicKey: P256.Signing.PublicKey) {
            self.teamID = teamID
            self.keyID = keyID
            self.publicKey = publicKey
        }
    }

    struct State: Sendable {
        var requests: [Request] = []
        var script: [Answer] = []
        /// How to answer when nothing is scripted (a soak's mix of faults); accept when nil.
        var policy: (@Sendable (Request) -> Answer)?
        var connections = 0
        var openConnections = 0
        /// Requests received and not answered yet, and the most there ever were.
        var unanswered = 0
        var mostUnanswered = 0
        /// The same per connection: what a client's stream limit decides, whatever the machine's load.
        var unansweredOnConnection: [ObjectIdentifier: Int] = [:]
        /// Connections told GOAWAY (last stream 0: nothing processed): a request read on one
        /// after it is not processed either, so no policy hears of it.
        var goingAway: Set<ObjectIdentifier> = []
        var onLostConnection: (@Sendable () -> Void)?
        var mostUnansweredOnOneConnection = 0
        /// Broadcast channels that exist (iOS 18 Live Activities), and their storage policies.
        var channels: Set<String> = []
        var channelPolicies: [String: Int] = [:]
    }

    public let port: Int
    let credentials: Credentials
    let state = ObservedState(State())
    private let channel: any Channel

    private init(port: Int, credentials: Credentials, channel: any Channel) {
        self.port = port
        self.credentials = credentials
        self.channel = channel
    }

    public static func start(
        credentials: Credentials,
        authority: TestCertificateAuthority,
        maxConcurrentStreams: Int = 100
    ) async throws -> APNsStandIn {
        let tls = try authority.serverContext()
        let box = LateBound<APNsStandIn>()
        let settings = [HTTP2Setting(parameter: .maxConcurrentStreams, value: maxConcurrentStreams)]
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(ChannelOptions.backlog, value: 256)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    box.value?.state.update {
                        $0.connections += 1
                        $0.openConnections += 1
                    }
                    let connectionID = ObjectIdentifier(channel)
                    channel.closeFuture.whenComplete { _ in
                        let lost = box.value?.state.update { state -> (@Sendable () -> Void)? in
                            state.openConnections -= 1
                            state.goingAway.remove(connectionID)
                            let unanswered = state.unansweredOnConnection.removeValue(forKey: connectionID) ?? 0
                            return unanswered > 0 ? state.onLostConnection : nil
                        }
                        if case let lost?? = lost { lost() }
                    }
                    let sync = channel.pipeline.syncOperations
                    try sync.addHandler(NIOSSLServerHandler(context: tls))
                    var connection = NIOHTTP2Handler.ConnectionConfiguration()
                    connection.initialSettings = settings
                    _ = try sync.configureHTTP2Pipeline(mode: .server, connectionConfiguration: connection, streamConfiguration: .init()) { stream in
                        stream.eventLoop.makeCompletedFuture {
                            try stream.pipeline.syncOperations.addHandler(StandInStreamHandler(box: box))
                        }
                    }
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        let standIn = APNsStandIn(port: channel.localAddress?.port ?? 0, credentials: credentials, channel: channel)
        box.value = standIn
        return standIn
    }

    public var baseURL: String { "https://localhost:\(port)" }
    /// Channels that exist now.
    public var channels: Set<String> { state.value.channels }
    public var requests: [Request] { state.value.requests }
    /// Connections accepted so far.
    public var connections: Int { state.value.connections }
    /// The most requests that were ever waiting for their answer at once.
    public var mostConcurrentRequests: Int { state.value.mostUnanswered }
    /// The most requests unanswered at once on any one connection: never above the streams a
    /// client allows itself, however many a loaded machine manages to overlap.
    public var mostConcurrentRequestsOnOneConnection: Int { state.value.mostUnansweredOnOneConnection }

    /// Called when a connection closes (from either side) while requests on it were unanswered:
    /// their sender cannot know they arrived, and sends again.
    public func whenConnectionLost(_ handler: @escaping @Sendable () -> Void) { state.update { $0.onLostConnection = handler } }

    /// A new broadcast channel's id (base64, as APNs makes them).
    public func createChannel() -> String {
        let id = Self.newChannelID()
        state.update { _ = $0.channels.insert(id) }
        return id
    }

    static func newChannelID() -> String { Data((0..<16).map { _ in UInt8.random(in: 0...255) }).base64EncodedString() }

    /// Deletes a channel: broadcasts to it answer 400 ChannelNotRegistered.
    public func deleteChannel(_ id: String) { state.update { _ = $0.channels.remove(id) } }

    /// Answers for the next requests, in order; afterwards requests are accepted.
    public func script(_ answers: Answer...) {
        state.update { $0.script += answers }
    }

    /// Decides the answer of every request nothing is scripted for.
    public func answer(with policy: @escaping @Sendable (Request) -> Answer) {
        state.update { $0.policy = policy }
    }

    /// Forgets the requests received so far (a long soak keeps only what it counts).
    public func takeRequests() -> [Request] {
        state.update { state in
            defer { state.requests.removeAll() }
            return state.requests
        }
    }

    /// Waits until at least `count` requests arrived.
    @discardableResult
    public func waitForRequests(_ count: Int, timeout: Double = 20) async throws -> [Request] {
        try await state.wait(
            timeout: timeout,
            { $0.requests.count >= count ? $0.requests : nil },
            failure: { WaitTimedOut("expected \(count) APNs requests, got \($0.requests.count)") }
        )
    }

    /// Waits until exactly `count` connections are open (clients close the ones they retire).
    public func waitForOpenConnections(_ count: Int, timeout: Double = 20) async throws {
        try await state.wait(
            timeout: timeout,
            { $0.openConnections == count ? () : nil },
            failure: { WaitTimedOut("expected \(count) open APNs connections, have \($0.openConnections)") }
        )
    }

    public func stop() async {
        try? await channel.close()
    }

    /// Checks a request as APNs would and decides the answer.
    func receive(headers: HPACKHeaders, body: ByteBuffer, connection: ObjectIdentifier? = nil) -> (Request, Answer) {
        var fields: [String: String] = [:]
        for header in headers { fields[header.name] = header.value }
        let path = fields[":path"] ?? ""
        let broadcast = path.hasPrefix("/4/broadcasts/apps/")
        let token = broadcast ? fields["apns-channel-id"] ?? "" : path.hasPrefix("/3/device/") ? String(path.dropFirst("/3/device/".count)) : ""
        let json = try? JSON.parse(body.readableBytesView)
        let (issuedAt, tokenProblem) = verifyProviderToken(fields["authorization"] ?? "")
        let management = path.hasPrefix("/1/apps/")
        let rejection =
            tokenProblem
            ?? (management
                ? nil
                : broadcast
                    ? checkBroadcast(fields, channel: token, body: body, json: json)
                    : check(fields, token: token, body: body, json: json))
        let request = Request(
            path: path,
            token: token,
            headers: fields,
            body: json,
            bodySize: body.readableBytes,
            tokenIssuedAt: issuedAt,
            authorization: fields["authorization"] ?? "",
            rejection: rejection,
            apnsID: fields["apns-id"] ?? UUID().uuidString.lowercased()
        )
        let answer = state.update { state -> Answer in
            state.requests.append(request)
            if rejection == nil, management { return Self.manageChannels(request, &state) }
            state.unanswered += 1
            state.mostUnanswered = max(state.mostUnanswered, state.unanswered)
            if let connection {
                state.unansweredOnConnection[connection, default: 0] += 1
                state.mostUnansweredOnOneConnection = max(state.mostUnansweredOnOneConnection, state.unansweredOnConnection[connection]!)
            }
            if let rejection {
                let status = rejection == "PayloadTooLarge" ? 413 : rejection.hasSuffix("ProviderToken") ? 403 : 400
                return .reject(status: status, reason: rejection)
            }
            if let connection, state.goingAway.contains(connection) { return .goAway(reason: "Shutdown") }
            let answer = state.script.isEmpty ? state.policy?(request) ?? .accept : state.script.removeFirst()
            if case .goAway = answer, let connection { state.goingAway.insert(connection) }
            return answer
        }
        return (request, answer)
    }

    func check(_ fields: [String: String], token: String, body: ByteBuffer, json: JSON?) -> String? {
        guard fields[":method"] == "POST" else { return "MethodNotAllowed" }
        guard !token.isEmpty, token.count % 2 == 0, token.allSatisfy(\.isHexDigit) else {
            return token.isEmpty ? "MissingDeviceToken" : "BadDeviceToken"
        }
        guard let topic = fields["apns-topic"] else { return "MissingTopic" }
        let pushType = fields["apns-push-type"] ?? ""
        guard
            ["alert", "background", "liveactivity", "voip", "complication", "fileprovider", "mdm", "location", "pushtotalk", "widgets"]
                .contains(pushType)
        else { return "InvalidPushType" }
        let liveActivityTopic = topic.hasSuffix(".push-type.liveactivity")
        if (pushType == "liveactivity") != liveActivityTopic || (pushType == "voip") != topic.hasSuffix(".voip") { return "DeviceTokenNotForTopic" }
        if let priority = fields["apns-priority"] {
            guard ["1", "5", "10"].contains(priority) else { return "BadPriority" }
            if pushType == "background" && priority != "5" { return "BadPriority" }
        }
        if let id = fields["apns-id"], UUID(uuidString: id) == nil || id != id.lowercased() { return "BadMessageId" }
        if let collapse = fields["apns-collapse-id"], collapse.utf8.count > 64 { return "BadCollapseId" }
        if let expiration = fields["apns-expiration"], Int(expiration) == nil { return "BadExpirationDate" }
        guard body.readableBytes > 0 else { return "PayloadEmpty" }
        guard body.readableBytes <= (pushType == "voip" ? 5120 : 4096) else { return "PayloadTooLarge" }
        guard let json, json["aps"]?.objectValue != nil else { return "BadPayload" }
        return nil
    }

    /// The channel-management API (`/1/apps/<bundle>/channels`, `/all-channels`), as Apple
    /// documents it: create answers 201 with the id in `apns-channel-id`, read 200 with the
    /// configuration, delete 204, list 200 `{"channels": [...]}`; an unknown channel 400.
    static func manageChannels(_ request: Request, _ state: inout State) -> Answer {
        let method = request.headers[":method"] ?? ""
        let echo = request.headers["apns-request-id"].map { ["apns-request-id": $0] } ?? [:]
        func refuse(_ reason: String) -> Answer { .respond(status: 400, headers: echo, body: ["reason": .string(reason)]) }
        if request.path.hasSuffix("/all-channels") {
            return method == "GET"
                ? .respond(status: 200, headers: echo, body: ["channels": .array(state.channels.sorted().map(JSON.string))])
                : .respond(status: 405, headers: echo, body: ["reason": "MethodNotAllowed"])
        }
        guard request.path.hasSuffix("/channels") else { return .respond(status: 404, headers: echo, body: ["reason": "BadPath"]) }
        switch method {
        case "POST":
            guard request.body?["push-type"] == "LiveActivity" else { return refuse("InvalidPushType") }
            guard let policy = request.body?["message-storage-policy"]?.intValue, [0, 1].contains(policy) else { return refuse("BadRequestPayload") }
            let id = newChannelID()
            state.channels.insert(id)
            state.channelPolicies[id] = Int(policy)
            return .respond(status: 201, headers: echo.merging(["apns-channel-id": id]) { $1 }, body: nil)
        case "GET", "DELETE":
            guard let id = request.headers["apns-channel-id"] else { return refuse("MissingChannelId") }
            guard state.channels.contains(id) else { return refuse("ChannelNotRegistered") }
            if method == "DELETE" {
                state.channels.remove(id)
                return .respond(status: 204, headers: echo, body: nil)
            }
            return .respond(
                status: 200,
                headers: echo,
                body: ["message-storage-policy": .int(Int64(state.channelPolicies[id] ?? 0)), "push-type": "LiveActivity"]
            )
        default:
            return .respond(status: 405, headers: echo, body: ["reason": "MethodNotAllowed"])
        }
    }

    /// A broadcast (`POST /4/broadcasts/apps/<bundle>`): an existing channel, a liveactivity
    /// update or end (a broadcast cannot start an activity), at most 5,120 bytes.
    func checkBroadcast(_ fields: [String: String], channel: String, body: ByteBuffer, json: JSON?) -> String? {
        guard fields[":method"] == "POST" else { return "MethodNotAllowed" }
        guard !channel.isEmpty else { return "MissingChannelId" }
        guard Data(base64Encoded: channel) != nil else { return "BadChannelId" }
        guard state.value.channels.contains(channel) else { return "ChannelNotRegistered" }
        guard fields["apns-push-type"] == "liveactivity" else { return fields["apns-push-type"] == nil ? "MissingPushType" : "InvalidPushType" }
        guard ["1", "5", "10"].contains(fields["apns-priority"] ?? "10") else { return "BadPriority" }
        if let expiration = fields["apns-expiration"], Int(expiration) == nil { return "BadExpirationDate" }
        guard body.readableBytes > 0 else { return "PayloadEmpty" }
        guard body.readableBytes <= 5120 else { return "PayloadTooLarge" }
        guard let event = json?["aps"]?["event"]?.stringValue, ["update", "end"].contains(event) else { return "BadRequestPayload" }
        return nil
    }

    /// Verifies `bearer <jwt>`: ES256 with the team's key, raw r||s signature, numeric `iat` younger than an hour.
    func verifyProviderToken(_ authorization: String) -> (Int?, String?) {
        guard authorization.lowercased().hasPrefix("bearer ") else { return (nil, "MissingProviderToken") }
        let parts = authorization.dropFirst("bearer ".count).split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerData = Self.base64URL(parts[0]), let claimsData = Self.base64URL(parts[1]),
            let signatureData = Self.base64URL(parts[2]),
            let header = try? JSON.parse(headerData), let claims = try? JSON.parse(claimsData)
        else { return (nil, "InvalidProviderToken") }
        guard header["alg"] == "ES256" else { return (nil, "InvalidProviderToken") }
        guard header["kid"]?.stringValue == credentials.keyID else { return (nil, "InvalidProviderToken") }
        guard let signature = try? P256.Signing.ECDSASignature(rawRepresentation: signatureData),
            credentials.publicKey.isValidSignature(signature, for: Data("\(parts[0]).\(parts[1])".utf8))
        else { return (nil, "InvalidProviderToken") }
        guard claims["iss"]?.stringValue == credentials.teamID else { return (nil, "InvalidProviderToken") }
        guard case .int(let issuedAt)? = claims["iat"] else { return (nil, "InvalidProviderToken") }
        guard Date().timeIntervalSince1970 - Double(issuedAt) < 3600 else { return (Int(issuedAt), "ExpiredProviderToken") }
        return (Int(issuedAt), nil)
    }

    static func base64URL(_ text: Substring) -> Data? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        return Data(base64Encoded: base64)
    }
}

final class StandInStreamHandler: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame.FramePayload
    typealias OutboundOut = HTTP2Frame.FramePayload

    let box: LateBound<APNsStandIn>
    var headers = HPACKHeaders()
    var body = ByteBuffer()
    /// The id the answer carries (`APNsStandIn.Request.apnsID`).
    var apnsID = ""

    init(box: LateBound<APNsStandIn>) { self.box = box }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .headers(let frame):
            headers.add(contentsOf: frame.headers)
            if frame.endStream { finish(context: context) }
        case .data(let frame):
            if case .byteBuffer(var buffer) = frame.data { body.writeBuffer(&buffer) }
            if frame.endStream { finish(context: context) }
        default:
            break
        }
    }

    func finish(context: ChannelHandlerContext) {
        guard let standIn = box.value else { return }
        let (request, answer) = standIn.receive(headers: headers, body: body, connection: context.channel.parent.map(ObjectIdentifier.init))
        apnsID = request.apnsID
        respond(answer, context: context)
    }

    func respond(_ answer: APNsStandIn.Answer, context: ChannelHandlerContext) {
        switch answer {
        case .delayed, .held: break
        default:
            let connection = context.channel.parent.map(ObjectIdentifier.init)
            box.value?.state.update { state in
                state.unanswered -= 1
                if let connection { state.unansweredOnConnection[connection, default: 1] -= 1 }
            }
        }
        switch answer {
        case .accept:
            let answer: HPACKHeaders =
                if let requestID = headers.first(name: "apns-request-id"), headers.first(name: "apns-channel-id") != nil {
                    // A broadcast: its request id echoed, and the id of the message APNs sends to the channel.
                    [":status": "200", "apns-request-id": requestID, "apns-unique-id": UUID().uuidString.lowercased()]
                } else {
                    [":status": "200", "apns-id": apnsID]
                }
            context.writeAndFlush(wrapOutboundOut(.headers(.init(headers: answer, endStream: true))), promise: nil)
        case .reject(let status, let reason, let timestamp):
            var json: [String: JSON] = ["reason": .string(reason)]
            if let timestamp { json["timestamp"] = .int(timestamp) }
            let responseHeaders: HPACKHeaders = [
                ":status": String(status), "content-type": "application/json",
                "apns-id": apnsID,
            ]
            context.write(wrapOutboundOut(.headers(.init(headers: responseHeaders, endStream: false))), promise: nil)
            context.writeAndFlush(
                wrapOutboundOut(.data(.init(data: .byteBuffer(ByteBuffer(data: JSON.object(json).serialized())), endStream: true))),
                promise: nil
            )
        case .respond(let status, let extra, let body):
            var responseHeaders: HPACKHeaders = [":status": String(status)]
            for (name, value) in extra { responseHeaders.add(name: name, value: value) }
            if let body {
                responseHeaders.add(name: "content-type", value: "application/json")
                context.write(wrapOutboundOut(.headers(.init(headers: responseHeaders, endStream: false))), promise: nil)
                context.writeAndFlush(
                    wrapOutboundOut(.data(.init(data: .byteBuffer(ByteBuffer(data: body.serialized())), endStream: true))),
                    promise: nil
                )
            } else {
                context.writeAndFlush(wrapOutboundOut(.headers(.init(headers: responseHeaders, endStream: true))), promise: nil)
            }
        case .goAway(let reason):
            guard let parent = context.channel.parent else { return }
            let frame = HTTP2Frame(
                streamID: .rootStream,
                payload: .goAway(
                    lastStreamID: .rootStream,
                    errorCode: .noError,
                    opaqueData: ByteBuffer(string: "{\"reason\":\"\(reason)\"}")
                )
            )
            parent.writeAndFlush(frame).whenComplete { _ in parent.close(promise: nil) }
        case .delayed(let delay, let then):
            let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            context.eventLoop.scheduleTask(in: TimeAmount(delay)) {
                let (handler, context) = loopBound.value
                handler.respond(then, context: context)
            }
        case .held(let gate, let then):
            let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            let eventLoop = context.eventLoop
            gate.whenOpen {
                eventLoop.execute {
                    let (handler, context) = loopBound.value
                    handler.respond(then, context: context)
                }
            }
        }
    }
}
