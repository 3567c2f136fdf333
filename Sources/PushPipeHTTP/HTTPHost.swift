import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import PushPipeCore
import ServiceLifecycle
import Synchronization

/// Serves every route the running pipelines declare, plus `GET /healthz` and `GET /readyz`.
///
/// Routing is done here, not by Hummingbird's router, because the table changes on reload
/// without restarting the server, and because a path that exists with another method must
/// answer 405, not 404.
public final class HTTPHost: RouteServing {
    /// What the listener itself guards against, whatever the routes say.
    public struct Protection: Sendable {
        /// Peers whose `X-Forwarded-For` names the client (a load balancer in front); anyone
        /// else could name any address to slip past a per-client limit.
        public var trustedProxies: Set<String>
        /// How long a connection may take to send a whole request (`RequestTimeoutHandler`).
        public var requestTimeout: Duration

        public init(trustedProxies: Set<String> = [], requestTimeout: Duration = .seconds(30)) {
            self.trustedProxies = trustedProxies
            self.requestTimeout = requestTimeout
        }
    }

    static let idempotencyKey = HTTPField.Name("Idempotency-Key")!
    static let traceParent = HTTPField.Name("traceparent")!
    static let forwardedFor = HTTPField.Name("X-Forwarded-For")!
    /// Nil until the pipelines' routes are first set: the listener may be up a moment before,
    /// and a request then is answered "starting", not "no such route".
    private let table = Mutex<RouteTable?>(nil)
    /// In a struct, not as the mutex's value itself (see `CommitObserver`).
    private struct ReadinessCheck: Sendable { let problems: @Sendable () async -> [String: String] }
    private let readiness = Mutex<ReadinessCheck?>(nil)
    private let authenticator: RouteAuthenticator
    private let rateLimiter = RateLimiter()
    let protection: Protection
    let logger: Logger

    /// - Parameter identityLookup: asks the identity URLs of `auth: {type: identity}` routes
    ///   (the composition root's HTTP client); without one, such routes answer 503.
    public init(protection: Protection = Protection(), identityLookup: (any IdentityLookup)? = nil, logger: Logger) {
        self.protection = protection
        self.logger = logger
        authenticator = RouteAuthenticator(identityLookup: identityLookup)
    }

    public func replaceRoutes(_ routes: RouteTable) {
        table.withLock { $0 = routes }
    }

    public var routes: RouteTable { table.withLock { $0 } ?? RouteTable() }

    /// What `/readyz` reports: the problems that keep the daemon from being ready.
    public func setReadiness(_ problems: @escaping @Sendable () async -> [String: String]) {
        readiness.withLock { $0 = ReadinessCheck(problems: problems) }
    }

    /// The Hummingbird application; a `Service` to run in the daemon's service group.
    public func application(
        host: String,
        port: Int,
        onRunning: @escaping @Sendable (Int) async -> Void = { _ in }
    )
        -> some Service
    {
        let timeout = TimeAmount(protection.requestTimeout)
        return Self.application(
            responder: Responder(host: self),
            serverName: "pushpipe",
            host: host,
            port: port,
            logger: logger,
            server: .http1(configuration: .init(additionalChannelHandlers: [RequestTimeoutHandler(timeout: timeout)])),
            onRunning: onRunning
        )
    }

    /// A Hummingbird server on `host:port` that reports the port it got (port 0 picks one).
    static func application<Responder: HTTPResponder>(
        responder: Responder,
        serverName: String,
        host: String,
        port: Int,
        logger: Logger,
        server: HTTPServerBuilder = .http1(),
        onRunning: @escaping @Sendable (Int) async -> Void
    ) -> some Service
    where Responder.Context: InitializableFromSource<ApplicationRequestContextSource> {
        let application = Application(
            responder: responder,
            server: server,
            configuration: ApplicationConfiguration(address: .hostname(host, port: port), serverName: serverName),
            onServerRunning: { channel in await onRunning(channel.localAddress?.port ?? port) },
            logger: logger
        )
        // Handlers on the loops that read their requests (the application's group is the singleton).
        return ExecutorPreferringService(inner: application, executor: EventLoopGroupTaskExecutor.singleton)
    }

    struct Responder: HTTPResponder {
        let host: HTTPHost

        func respond(to request: Request, context: ClientRequestContext) async throws -> Response {
            do {
                let answer = try await host.handle(request, from: context.peer)
                var response = HTTPHost.response(status: answer.status, body: answer.body)
                for (name, value) in answer.headers {
                    if let field = HTTPField.Name(name) { response.headers[field] = value }
                }
                return response
            } catch {
                guard let refusal = HTTPHost.refusal(error) else {
                    host.logger.error("route failed", metadata: ["path": .string(request.uri.path), "error": .string("\(error)")])
                    return HTTPHost.response(status: 500, body: RouteError(500, "internal error").body)
                }
                var response = HTTPHost.response(status: refusal.status, body: refusal.body)
                if let retryAfter = refusal.retryAfter ?? (refusal.status == 503 ? 1 : nil) { response.headers[.retryAfter] = "\(retryAfter)" }
                return response
            }
        }
    }

    /// The answer to a request that failed for a reason its caller can act on. A pipeline that
    /// stops and a store that does not answer kept nothing of the request: its sender sends it
    /// again (503, `Retry-After`), to this daemon once it is back or to another.
    static func refusal(_ error: any Error) -> RouteError? {
        switch error {
        case let error as RouteError: error
        case let stopping as PipelineStopping: RouteError(503, stopping.description)
        case _ where StoreAvailability.meansAway(error): RouteError(503, "the store does not answer; nothing was stored, try again")
        default: nil
        }
    }

    func handle(_ request: Request, from peer: String?) async throws -> RouteResponse {
        let method = request.method.rawValue
        let path = request.uri.path
        if path == "/healthz" && (method == "GET" || method == "HEAD") { return RouteResponse(["status": "ok"]) }
        if path == "/readyz" && (method == "GET" || method == "HEAD") {
            let (status, body) = Health.readiness(await readiness.withLock { $0 }?.problems() ?? ["pipelines": "starting"], withReasons: false)
            return RouteResponse(status: status, body)
        }
        guard let routes = table.withLock({ $0 }) else {
            throw RouteError(503, "starting: the pipelines' routes are not up yet, try again", field: nil)
        }
        let entry: RouteTable.Entry
        let parameters: [String: String]
        switch routes.lookup(method: method, path: path) {
        case .notFound:
            throw RouteError.notFound("no route for \(path)", field: "path")
        case .methodNotAllowed(let allowed):
            throw RouteError(405, "method \(method) not allowed here; allowed: \(allowed.joined(separator: ", "))", field: "method")
        case .found(let found, let foundParameters):
            entry = found
            parameters = foundParameters
        }
        let limits = entry.route.limits
        // Made only for a route with a rate to keep.
        var routeKey: String { entry.route.method + " " + entry.route.path }
        if let rate = limits.perClient {
            try admit(routeKey + "\u{1}" + clientAddress(request, peer: peer), rate, who: "this client address")
        }
        let user = try await authenticator.authenticate(entry.route.authentication, authorization: request.headers[.authorization])
        let principal = RouteAuthenticator.principal(entry.route.authentication, user: user)
        if let rate = limits.perPrincipal, !principal.isEmpty {
            try admit(routeKey + "\u{2}" + principal, rate, who: "this caller")
        }
        let body = try await Self.parseBody(request, limit: limits.maxBodyBytes)
        var query: [String: String] = [:]
        for (key, value) in request.uri.queryParameters { query[String(key)] = String(value).removingPercentEncoding ?? String(value) }
        let routeRequest = RouteRequest(
            method: method,
            path: path,
            parameters: parameters,
            query: query,
            body: body,
            authenticatedUser: user,
            principal: principal,
            idempotencyKey: request.headers[HTTPHost.idempotencyKey],
            // A W3C traceparent is 55 characters; anything much longer is not one.
            traceParent: request.headers[HTTPHost.traceParent].flatMap { $0.utf8.count <= 128 ? $0 : nil }
        )
        return try await entry.route.handler(routeRequest, entry.context)
    }

    /// A token from a route's bucket, or 429 with how long until there is one.
    private func admit(_ key: String, _ rate: RouteLimits.Rate, who: String) throws {
        guard let wait = rateLimiter.admit(key, rate) else { return }
        let seconds = max(1, Int((wait / .seconds(1)).rounded(.up)))
        throw RouteError(429, "too many requests from \(who); try again in \(seconds) s", field: nil, retryAfter: seconds)
    }

    /// The client: the peer, or, when the peer is a trusted proxy, the nearest address in
    /// `X-Forwarded-For` that is not one of the trusted proxies.
    func clientAddress(_ request: Request, peer: String?) -> String {
        let peer = peer ?? ""
        guard protection.trustedProxies.contains(peer), let forwarded = request.headers[HTTPHost.forwardedFor] else { return peer }
        let hops = forwarded.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        return hops.last { !protection.trustedProxies.contains($0) } ?? hops.first ?? peer
    }

    /// Size limit, content type and JSON syntax are checked here so no stage ever sees a bad body.
    static func parseBody(_ request: Request, limit: Int) async throws -> JSON? {
        if let length = request.headers[.contentLength].flatMap(Int.init), length > limit {
            throw RouteError(413, "request body is larger than \(limit) bytes", field: "body")
        }
        let buffer: ByteBuffer
        do {
            buffer = try await request.body.collect(upTo: limit)
        } catch {
            throw RouteError(413, "request body is larger than \(limit) bytes", field: "body")
        }
        guard buffer.readableBytes > 0 else { return nil }
        let contentType = request.headers[.contentType]?.lowercased() ?? ""
        guard contentType.hasPrefix("application/json") || contentType.hasPrefix("application/") && contentType.contains("+json") else {
            throw RouteError(415, "content type must be application/json", field: "content-type")
        }
        let json: JSON
        do {
            json = try buffer.withUnsafeReadableBytes { try JSON.parse($0, maximumDepth: JSON.acceptedDepth) }
        } catch {
            throw RouteError.badRequest("\(error)", field: "body")
        }
        guard case .object = json else {
            throw RouteError.unprocessable("request body must be a JSON object, found \(json.typeName)", field: "body")
        }
        return json
    }

    static func response(status: Int, body: JSON) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "application/json"
        return Response(status: .init(code: status), headers: headers, body: .init(byteBuffer: ByteBuffer(data: body.serialized())))
    }
}
