import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import PushPipeCore

/// An in-process online-go.com answering `GET /api/v1/players/{id}/full` from memory, with
/// documents shaped like Tests/PushPipeAppsTests/Fixtures/ogs-player-full.reconstructed.json, and `GET
/// /api/v1/me` per bearer token (`OGSStandIn+Identity`). Tests move the
/// games' clocks and make a player's requests fail (429, 500, slow, malformed JSON).
public final class OGSStandIn: Sendable {
    public struct Game: Sendable {
        public var id: Int64
        public var name: String
        public var black: Int64
        public var white: Int64
        public var currentPlayer: Int64
        /// Milliseconds since the epoch.
        public var lastMove: Int64
        public var timePerMove: Int64

        public init(id: Int64, name: String, black: Int64, white: Int64, currentPlayer: Int64, lastMove: Int64, timePerMove: Int64 = 86400) {
            self.id = id
            self.name = name
            self.black = black
            self.white = white
            self.currentPlayer = currentPlayer
            self.lastMove = lastMove
            self.timePerMove = timePerMove
        }
    }

    public enum Behavior: Sendable {
        case normal
        case status(Int, retryAfter: Int? = nil)
        /// 429 with any `Retry-After` text, including nonsense such as `inf`.
        case throttled(retryAfter: String)
        case malformed
        case delayed(Duration)
    }

    struct State: Sendable {
        var games: [Int64: [Game]] = [:]
        var behaviors: [Int64: Behavior] = [:]
        var requests: [Int64] = []
        var requestTimes: [ContinuousClock.Instant] = []
        /// `/api/v1/me`: the player each bearer token belongs to, how it answers, how often it was asked.
        var identities: [String: Int64] = [:]
        var identityBehavior: Behavior = .normal
        var identityRequests = 0
    }

    let state = ObservedState(State())
    public let port: Int
    /// `https` when started with a certificate authority (a mirror with a private CA).
    public let scheme: String
    private let channel: any Channel

    private init(port: Int, scheme: String, channel: any Channel) {
        self.port = port
        self.scheme = scheme
        self.channel = channel
    }

    /// - Parameter authority: serve HTTPS with a certificate from this throwaway CA.
    public static func start(authority: TestCertificateAuthority? = nil) async throws -> OGSStandIn {
        let tls = try authority.map { authority in
            var tls = TLSConfiguration.makeServerConfiguration(
                certificateChain: [.certificate(authority.serverCertificate)],
                privateKey: .privateKey(authority.serverKey)
            )
            tls.applicationProtocols = ["http/1.1"]
            return try NIOSSLContext(configuration: tls)
        }
        let box = LateBound<OGSStandIn>()
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(ChannelOptions.backlog, value: 1024)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    if let tls { try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: tls)) }
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    try channel.pipeline.syncOperations.addHandler(OGSRequestHandler(box: box))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        let standIn = OGSStandIn(port: channel.localAddress?.port ?? 0, scheme: tls == nil ? "http" : "https", channel: channel)
        box.value = standIn
        return standIn
    }

    /// `localhost` for HTTPS: the throwaway certificate names it.
    public var baseURL: String { scheme == "https" ? "https://localhost:\(port)" : "http://127.0.0.1:\(port)" }
    public var requests: [Int64] { state.value.requests }
    /// Each request's player and when it arrived, in order.
    public var timedRequests: [(player: Int64, at: ContinuousClock.Instant)] {
        let state = state.value
        return Array(zip(state.requests, state.requestTimes).map { (player: $0, at: $1) })
    }

    public func setGames(_ player: Int64, _ games: [Game]) {
        state.update { $0.games[player] = games }
    }

    /// Adds one game to a player's active games.
    public func addGame(_ player: Int64, _ game: Game) {
        state.update { $0.games[player, default: []].append(game) }
    }

    /// Moves a game's clock: whose turn it is and when the last move was made.
    public func move(game id: Int64, currentPlayer: Int64, lastMove: Int64) {
        state.update { state in
            for (player, games) in state.games {
                state.games[player] = games.map { game in
                    guard game.id == id else { return game }
                    var moved = game
                    moved.currentPlayer = currentPlayer
                    moved.lastMove = lastMove
                    return moved
                }
            }
        }
    }

    /// How `player`'s requests answer from now on; `.status(404)`, as OGS answers for an id no
    /// player has (every other id is a player, without games until some are set).
    public func behave(_ behavior: Behavior, for player: Int64) {
        state.update { $0.behaviors[player] = behavior }
    }

    /// Waits until every one of `players` was asked for after the first `skip` requests.
    public func waitForRequests(from players: Set<Int64>, after skip: Int, timeout: Double = 20) async throws {
        try await state.wait(
            timeout: timeout,
            { state in players.isSubset(of: Set(state.requests.dropFirst(skip))) ? () : nil },
            failure: { state in WaitTimedOut("\(players.subtracting(state.requests.dropFirst(skip)).count) players not asked for") }
        )
    }

    public func waitForRequests(_ count: Int, timeout: Double = 20) async throws -> [Int64] {
        try await state.wait(
            timeout: timeout,
            { $0.requests.count >= count ? $0.requests : nil },
            failure: { WaitTimedOut("expected \(count) OGS requests, got \($0.requests.count)") }
        )
    }

    public func stop() async {
        try? await channel.close()
    }

    /// The answer for one request: status, extra headers, body, delay.
    func answer(path: String, authorization: String? = nil) -> (status: Int, headers: [(String, String)], body: String, delay: Duration) {
        if path == "/api/v1/me" { return answerIdentity(authorization: authorization) }
        let parts = path.split(separator: "/")
        guard parts.count == 5, parts[0] == "api", parts[1] == "v1", parts[2] == "players", parts[4] == "full", let player = Int64(parts[3]) else {
            return (404, [], #"{"detail": "Not found."}"#, .zero)
        }
        let (games, behavior) = state.update { state -> ([Game]?, Behavior) in
            state.requests.append(player)
            state.requestTimes.append(.now)
            return (state.games[player], state.behaviors[player] ?? .normal)
        }
        switch behavior {
        case .status(let code, let retryAfter):
            return (code, retryAfter.map { [("retry-after", String($0))] } ?? [], #"{"detail": "Request was throttled."}"#, .zero)
        case .throttled(let retryAfter):
            return (429, [("retry-after", retryAfter)], #"{"detail": "Request was throttled."}"#, .zero)
        case .malformed:
            return (200, [], #"{"user": {"id": "#, .zero)
        case .delayed(let delay):
            return (200, [], Self.document(player: player, games: games ?? []).compactText, delay)
        case .normal:
            // Every id is a player (no games until set): a made-up one is `behave(.status(404), for:)`.
            return (200, [], Self.document(player: player, games: games ?? []).compactText, .zero)
        }
    }

    static func document(player owner: Int64, games: [Game]) -> JSON {
        func player(_ id: Int64) -> JSON {
            [
                "id": .int(id), "username": .string("player\(id)"), "ranking": 28.5, "pro": false,
                "ratings": ["version": 5, "overall": ["rating": 1500.0, "deviation": 350.0, "volatility": 0.06]],
            ]
        }
        let active: [JSON] = games.map { game in
            [
                "id": .int(game.id), "name": .string(game.name), "black": player(game.black), "white": player(game.white),
                "width": 19, "height": 19, "time_per_move": .int(game.timePerMove),
                "json": [
                    "game_id": .int(game.id), "game_name": .string(game.name), "phase": "play",
                    "players": [
                        "black": ["id": .int(game.black), "username": .string("player\(game.black)")],
                        "white": ["id": .int(game.white), "username": .string("player\(game.white)")],
                    ],
                    "clock": [
                        "game_id": .int(game.id), "current_player": .int(game.currentPlayer), "black_player_id": .int(game.black),
                        "white_player_id": .int(game.white), "title": .string(game.name), "last_move": .int(game.lastMove),
                        "expiration": .int(game.lastMove + game.timePerMove * 1000),
                        "black_time": ["thinking_time": 604800, "skip_bonus": false], "white_time": ["thinking_time": 604800, "skip_bonus": false],
                    ],
                ],
            ]
        }
        return [
            "user": ["id": .int(owner), "username": .string("player\(owner)"), "ranking": 28.5, "is_bot": false],
            "active_games": .array(active), "ladders": [], "tournaments": [], "titles": [], "trophies": [], "groups": [],
            "online_leagues": [], "is_friend": false, "vs": [:], "block": nil, "achievements": [],
        ]
    }
}

final class OGSRequestHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart
    let box: LateBound<OGSStandIn>
    var path = ""
    var authorization: String?
    var keepAlive = true

    init(box: LateBound<OGSStandIn>) { self.box = box }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            path = String(head.uri.split(separator: "?").first ?? "")
            authorization = head.headers.first(name: "authorization")
            keepAlive = head.isKeepAlive
        case .body:
            break
        case .end:
            guard let standIn = box.value else { return }
            let answer = standIn.answer(path: path, authorization: authorization)
            if answer.delay > .zero {
                let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
                context.eventLoop.scheduleTask(in: TimeAmount(answer.delay)) {
                    let (handler, context) = loopBound.value
                    handler.respond(answer, context: context)
                }
            } else {
                respond(answer, context: context)
            }
        }
    }

    func respond(_ answer: (status: Int, headers: [(String, String)], body: String, delay: Duration), context: ChannelHandlerContext) {
        HTTP1JSONResponse.write(
            status: answer.status,
            headers: answer.headers,
            body: ByteBuffer(string: answer.body),
            keepAlive: keepAlive,
            context: context
        )
    }
}
