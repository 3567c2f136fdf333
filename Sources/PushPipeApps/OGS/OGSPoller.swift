import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOFoundationCompat
import PushPipeCore
import PushPipeStages
import Synchronization

/// Polls Online-Go.com for every registered user and emits the games where it is their turn.
///
/// Which user is due when lives in the store (recurring work, `WorkQueue.schedule`): every daemon on a shared
/// database claims the users that are due, so each user is checked once per interval across
/// all of them, adding a daemon spreads the load, and a dead daemon's users come due again
/// for the others. New users come due evenly over the first 80% of their first interval, in
/// the order of their ids, so checks spread out instead of bursting and the first round ends
/// within the interval; at most `concurrency` run at once per daemon. A 429 pauses every
/// request for its `Retry-After`; any other failure (5xx, timeout, malformed JSON) backs off
/// that user only, exponentially, is recorded and shown in that user's diagnostics, and never
/// delays another user. An id OGS has no player for (404) is checked again only every
/// `unknown_player_interval`: registrations of made-up ids, which anyone can send to an
/// anonymous register route, must not add a request per id and interval until OGS throttles
/// everyone. A newly registered user is checked right away.
final class OGSPoller: Source, RegistrationObserver, DiagnosticsProvider, OneShotSource, Sendable {
    static let summary = "Polls OGS /api/v1/players/{id}/full per registered user; emits the games where it is their turn."

    struct Configuration: StageConfiguration {
        var baseUrl: String
        @Seconds var interval: Duration
        var concurrency: Int
        @Seconds var timeout: Duration
        var tokenKind: String
        var checkPath: String
        var minTimePerMove: Int
        var caFile: String
        @Seconds var unknownPlayerInterval: Duration

        static let schema = Schema([
            SchemaKey("base_url", .string, default: "https://online-go.com", "OGS server (or a mirror/stand-in)."),
            SchemaKey(
                "interval",
                .duration,
                default: 30,
                in: 1...Double.infinity,
                "Time between two checks of the same user (a shorter one would hammer OGS)."
            ),
            SchemaKey("concurrency", .integer, default: 8, in: 1...256, "Requests in flight at once."),
            SchemaKey("timeout", .duration, default: 10, "Per-request timeout."),
            SchemaKey("token_kind", .string, default: "device", "Users with a token of this kind are monitored."),
            SchemaKey("check_path", .string, default: "/check/:user_id", "Route that runs one check now; empty for none."),
            SchemaKey("min_time_per_move", .integer, default: 0, "Only games with at least this many seconds per move (3600: correspondence)."),
            SchemaKey("ca_file", .string, default: "", "PEM file of extra CAs to trust; verification stays on."),
            SchemaKey(
                "unknown_player_interval",
                .duration,
                default: 21_600,
                "Time between two checks of an id OGS has no player for (404), instead of `interval`: made-up ids cost a request per this time."
            ),
        ])
    }

    let configuration: Configuration
    let baseURL: String
    let logger = Logger(label: "pushpipe.ogs")
    private let status = Mutex<[String: UserStatus]>([:])
    /// Users a cycle is checking now: a check slower than the interval (OGS answering slowly)
    /// is not started again beside itself, so an id OGS has no player for is asked once before
    /// its backoff is known, not once per interval the first answer takes.
    private let checking = Mutex<Set<String>>([])
    /// Until when OGS asked every check to wait, on `clock.elapsed`.
    private let pausedUntil = Mutex<Duration?>(nil)
    /// Where checks are counted: the running pipeline's context, once `run` started.
    private let runContext = Mutex<StageContext?>(nil)
    private let registrations = AsyncStream<String>.makeStream(bufferingPolicy: .bufferingNewest(1000))

    /// What the last check of one user found, for diagnostics.
    struct UserStatus: Sendable {
        var lastCheck: Date?
        var games: [OGSPlayerDocument.MonitoredGame] = []
        var totalActiveGames = 0
        var lastError: String?
        var lastErrorAt: Date?
        var consecutiveFailures = 0
        /// Regular cycles skip the user until then (exponential backoff after failures).
        var retryAt: Duration?

        mutating func checked(at time: Date, games: [OGSPlayerDocument.MonitoredGame]) {
            lastCheck = time
            self.games = games
            totalActiveGames = games.count
            lastError = nil
            consecutiveFailures = 0
            retryAt = nil
        }
    }

    init(configuration: Configuration, context: StageBuildContext) throws {
        guard let url = URL(string: configuration.baseUrl), ["http", "https"].contains(url.scheme ?? ""), url.host != nil else {
            throw ConfigurationValueError(keyPath: "base_url", "'\(configuration.baseUrl)' is not an http(s) URL", expected: "https://online-go.com")
        }
        self.configuration = configuration
        baseURL = configuration.baseUrl.hasSuffix("/") ? String(configuration.baseUrl.dropLast()) : configuration.baseUrl
    }

    var routes: [RouteDefinition] {
        guard !configuration.checkPath.isEmpty else { return [] }
        let parameter = configuration.checkPath.split(separator: "/").first { $0.hasPrefix(":") }.map { String($0.dropFirst()) } ?? "user_id"
        // Apps call it, and each call polls OGS: an app route's limits keep a script from making
        // this daemon hammer OGS.
        let contract = RouteContract(
            summary: "Checks a user's games on OGS now and notifies what is new.",
            path: [parameter: UserIDFormat.digits.pathSchema],
            responses: [
                200: RouteContract.object(
                    [
                        "user_id": RouteContract.string, "found": ["type": "array"],
                        "total_active_games": ["type": "integer"], "error": RouteContract.string,
                    ],
                    required: ["user_id"]
                )
            ]
        )
        return [
            RouteDefinition(method: "GET", path: configuration.checkPath, limits: .app, contract: contract) { [self] request, context in
                guard let value = request.parameters[parameter] else { throw RouteError.badRequest("missing user", field: parameter) }
                let user = try UserIDFormat.digits.user(fromText: value, field: parameter)
                guard try await context.registrations.isRegistered(user: user) else {
                    throw RouteError.notFound("unknown user '\(user)'", field: parameter)
                }
                return RouteResponse(await check(user, pipeline: context.pipeline, sink: context.sink, logger: logger, wait: true))
            }
        ]
    }

    /// The shared HTTP clients' loop: a check and the pipeline run of what it found share a thread.
    var preferredExecutor: (any TaskExecutor)? { SharedHTTPClients.executor }

    func userRegistered(_ user: String) async {
        registrations.continuation.yield(user)
    }

    func run(into sink: any EventSink, context: StageContext) async throws {
        runContext.withLock { $0 = context }
        await withTaskGroup(of: Void.self) { group in
            // New registrations are checked at once, beside the regular cycles.
            group.addTask {
                for await user in self.registrations.stream {
                    // Registering again costs OGS nothing for an id backing off (one OGS has no
                    // player for: made-up ids registered over and over) or being checked now.
                    guard !self.isBackingOff(user, at: self.clock.elapsed), self.checking.withLock({ $0.insert(user).inserted }) else { continue }
                    _ = await self.check(user, pipeline: context.pipeline, sink: sink, logger: context.logger, wait: false)
                    _ = self.checking.withLock { $0.remove(user) }
                }
            }
            group.addTask { await self.cycles(sink: sink, context: context) }
            await group.next()
            group.cancelAll()
        }
    }

    /// Claims the users that are due and checks them, `concurrency` at once.
    ///
    /// A claim takes at most twice `concurrency` users, and the next claim comes when they
    /// have all started: a daemon claims what it can check now, not everything due. Claiming
    /// all that is due would let a slow or busy daemon take users it reaches only many seconds
    /// later (their next due time already set), while the other daemons on the database have room.
    private func cycles(sink: any EventSink, context: StageContext) async {
        let interval = configuration.interval
        let tick = min(.seconds(1), interval / 10)
        let work = context.work
        let kind = WorkItem.pollKind(source: context.key)
        let clock = context.clock
        var nextSync = clock.elapsed
        await withTaskGroup(of: Void.self) { group in
            var running = 0
            while !Task.isCancelled {
                if clock.elapsed >= nextSync {
                    // Its own failure: the claims go on with the schedule as it is, and the sync
                    // is tried again a few seconds later, not at every tick.
                    do {
                        try await work.schedule(kind, every: interval) {
                            try await context.registrations.tokens(user: nil, kind: configuration.tokenKind).map(\.user)
                        }
                        nextSync = clock.elapsed + min(interval, .seconds(60))
                        forgetStaleStatuses()
                    } catch {
                        nextSync = clock.elapsed + .seconds(5)
                        context.logger.error("poll schedule: \(error)")
                    }
                }
                do {
                    let limit = configuration.concurrency * 2
                    let due = try await work.claimRecurring(kind, every: interval, limit: limit)
                    // A hint: the claim is committed, so its users are checked whatever it finds.
                    try? await context.registrations.warmTokens(users: due)
                    let now = clock.elapsed
                    for user in due where !isBackingOff(user, at: now) && checking.withLock({ $0.insert(user).inserted }) {
                        if running >= configuration.concurrency {
                            await group.next()
                            running -= 1
                        }
                        if Task.isCancelled { break }
                        group.addTask {
                            _ = await self.check(user, pipeline: context.pipeline, sink: sink, logger: context.logger, wait: false)
                            _ = self.checking.withLock { $0.remove(user) }
                        }
                        running += 1
                    }
                    if !due.isEmpty { context.logger.debug("claimed \(due.count) due checks") }
                    // A full claim: more may be due, claim again as soon as these have started.
                    if due.count == limit { continue }
                } catch {
                    context.logger.error("poll schedule: \(error)")
                }
                try? await context.clock.sleep(for: tick)
            }
        }
    }

    /// Forgets the users this daemon has not checked for three intervals (at least ten
    /// minutes) and is not backing off from: unregistered, or checked by another daemon on the
    /// database. The map holds the users this daemon checks, not every user it ever checked.
    func forgetStaleStatuses(now: Date? = nil, elapsed: Duration? = nil) {
        let cutoff = (now ?? Date(timeIntervalSince1970: clock.now)).addingTimeInterval(-max(configuration.interval * 3, .seconds(600)).inSeconds)
        let monotonicNow = elapsed ?? clock.elapsed
        status.withLock { status in
            status = status.filter { _, entry in
                (entry.lastCheck ?? .distantPast) >= cutoff || (entry.retryAt.map { $0 > monotonicNow } ?? false)
            }
        }
    }

    var statusCount: Int { status.withLock { $0.count } }

    /// The running pipeline's clock (the system's before `run`, for a route called that early).
    var clock: any DaemonClock { runContext.withLock { $0?.clock } ?? SystemClock() }

    private func isBackingOff(_ user: String, at now: Duration) -> Bool {
        status.withLock { $0[user]?.retryAt.map { $0 > now } ?? false }
    }

    /// Fetches one user's games, records what was found, and emits the your-turn games.
    /// - Parameter wait: wait for the notification's outcome (the `/check` route reports it).
    private func check(_ user: String, pipeline: String, sink: any EventSink, logger: Logger, wait: Bool) async -> JSON {
        var result: [String: JSON] = ["user_id": .string(user)]
        count(.pollerChecks)
        do {
            let document = try await fetch(user)
            let (yourTurn, all) = try OGSPlayerDocument.games(in: document, user: user, minTimePerMove: configuration.minTimePerMove)
            let now = Date(timeIntervalSince1970: clock.now)
            status.withLock { status in
                // One lookup of the user: every check of every user passes here.
                status[user, default: UserStatus()].checked(at: now, games: all)
            }
            result["found"] = .array(yourTurn)
            result["total_active_games"] = .int(Int64(all.count))
            guard !yourTurn.isEmpty else {
                result["sent"] = .null
                return .object(result)
            }
            let event = Self.turnEvent(user: user, pipeline: pipeline, yourTurn: yourTurn, all: all)
            if wait {
                result["sent"] = try JSON(encoding: try await sink.submitAndWait(event))
            } else {
                try await sink.submit(event)
            }
        } catch {
            let message = "\(error)"
            let (now, elapsed) = (Date(timeIntervalSince1970: clock.now), clock.elapsed)
            status.withLock { status in
                status[user, default: UserStatus()].lastCheck = now
                status[user]!.lastError = message
                status[user]!.lastErrorAt = now
                status[user]!.consecutiveFailures += 1
                let skip = retryDelay(after: error, failures: status[user]!.consecutiveFailures)
                status[user]!.retryAt = elapsed + skip
            }
            logger.warning("OGS check of user \(user) failed: \(message)")
            count(.pollerFailures, [("reason", Self.failureReason(error))])
            result["error"] = .string(message)
        }
        return .object(result)
    }

    /// How long until a user whose check failed is checked again: an id OGS has no player for,
    /// `unknown_player_interval`; after any other failure 1, 2, 4, ... intervals, at most 10
    /// minutes (or one interval, if longer).
    func retryDelay(after error: any Error, failures: Int) -> Duration {
        let interval = configuration.interval
        if case OGSError.noSuchPlayer = error { return max(configuration.unknownPlayerInterval, interval) }
        return min(interval * (1 << min(max(failures - 1, 0), 20)), max(.seconds(600), interval))
    }

    /// Counted under the lock: taking the context out copied it (a logger, a store, a
    /// telemetry) for every check of every user.
    private func count(_ metric: Metric, _ labels: [(String, String)] = []) {
        runContext.withLock { $0?.count(metric, labels) }
    }

    /// A failed check's reason as a metric label: a handful of values, never a message.
    static func failureReason(_ error: any Error) -> String {
        switch error {
        case OGSError.status(let code, _): "http_\(code)"
        case OGSError.malformed: "malformed"
        case OGSError.notAPlayerID: "not_a_player_id"
        case OGSError.noSuchPlayer: "no_such_player"
        case let error as HTTPClientError where error == .deadlineExceeded || error == .readTimeout || error == .connectTimeout: "timeout"
        case is HTTPClientError, is IOError, is ChannelError: "connection"
        default: "other"
        }
    }

    /// The event of one check: the your-turn games (the dedupe filter trims them) and the
    /// counts the notification shows.
    static func turnEvent(user: String, pipeline: String, yourTurn: [JSON], all: [OGSPlayerDocument.MonitoredGame]) -> Event {
        Event(
            pipeline: pipeline,
            user: user,
            body: [
                "user_id": .string(user), "games": .array(yourTurn), "waiting_count": .int(Int64(yourTurn.count)),
                "total_active_games": .int(Int64(all.count)),
            ]
        )
    }

    /// One check of every registered user, returning the events instead of submitting them.
    func eventsOnce(context: StageContext) async throws -> [Event] {
        var events: [Event] = []
        for user in try await context.registrations.users() {
            let (yourTurn, all) = try OGSPlayerDocument.games(in: try await fetch(user), user: user, minTimePerMove: configuration.minTimePerMove)
            guard !yourTurn.isEmpty else { continue }
            events.append(Self.turnEvent(user: user, pipeline: context.pipeline, yourTurn: yourTurn, all: all))
        }
        return events
    }

    private func fetch(_ user: String) async throws -> JSON {
        guard !user.isEmpty, user.count <= 20, user.allSatisfy(\.isNumber) else { throw OGSError.notAPlayerID(user) }
        let clock = self.clock
        if let until = pausedUntil.withLock({ $0 }), until > clock.elapsed {
            count(.pollerRateLimitWaits)
            try await clock.sleep(for: until - clock.elapsed)
        }
        // The futures API: the async one starts an unstructured task per request (its cancel
        // handler's registration), which woke a thread of Swift's pool for every check.
        let request = try HTTPClient.Request(
            url: "\(baseURL)/api/v1/players/\(user)/full",
            headers: ["accept": "application/json", "user-agent": "pushpipe"]
        )
        let task = SharedHTTPClients.client(trusting: configuration.caFile)
            .execute(
                request: request,
                delegate: ResponseAccumulator(request: request, maxBodySize: 8 << 20),
                deadline: .now() + TimeAmount(configuration.timeout)
            )
        let response = try await withTaskCancellationHandler {
            try await task.futureResult.get()
        } onCancel: {
            task.cancel()
        }
        let body = response.body ?? ByteBuffer()
        let code = Int(response.status.code)
        // Whatever the server sends, a pause stays finite and at most an hour.
        let retryAfter = response.headers.first(name: "retry-after").flatMap(Double.init).flatMap { $0.isFinite ? min(max($0, 0), 3600) : nil }
        if code == 429 {
            // Throttling is about us, not this user: everyone waits, as long as OGS asked.
            let pause = Duration.seconds(max(retryAfter ?? 5, 1))
            let now = clock.elapsed
            pausedUntil.withLock { $0 = max($0 ?? now, now + pause) }
            throw OGSError.status(code, retryAfter: pause)
        }
        if code == 404 { throw OGSError.noSuchPlayer(user, checkedAgainIn: max(configuration.unknownPlayerInterval, configuration.interval)) }
        guard code == 200 else { throw OGSError.status(code, retryAfter: nil) }
        do {
            return try JSON.parse(body.readableBytesView, selecting: OGSPlayerDocument.selection, maximumDepth: JSON.acceptedDepth)
        } catch {
            throw OGSError.malformed("\(error)")
        }
    }

    func diagnostics(for user: String) async -> [String: JSON] {
        let current = status.withLock { $0[user] }
        let seconds = configuration.interval.inSeconds
        var view: [String: JSON] = [
            // Units the OGS app's diagnostics expect: the interval as text, the check time in
            // SECONDS (while `last_notification_time` is in milliseconds).
            "server_check_interval": .string(seconds.rounded() == seconds ? "\(Int(seconds))s" : "\(seconds)s"),
            "monitored_games": .array((current?.games ?? []).map(\.json)),
            "total_active_games": .int(Int64(current?.totalActiveGames ?? 0)),
            "last_server_check_time": current?.lastCheck.map { .int(Int64($0.timeIntervalSince1970)) } ?? .null,
        ]
        view["last_error"] =
            current?.lastError.map { error in
                ["message": .string(error), "at": .int(Int64(current?.lastErrorAt?.timeIntervalSince1970 ?? 0))]
            } ?? .null
        return view
    }
}

enum OGSError: Error, CustomStringConvertible {
    case notAPlayerID(String)
    /// OGS answered 404: it has no player of that id (made up, or deleted).
    case noSuchPlayer(String, checkedAgainIn: Duration)
    case status(Int, retryAfter: Duration?)
    case malformed(String)

    var description: String {
        switch self {
        case .notAPlayerID(let user): "'\(user)' is not an OGS player id (digits)"
        case .noSuchPlayer(let user, let wait): "OGS has no player \(user) (HTTP 404); checked again in \(Int(wait.inSeconds))s"
        case .status(let code, let retryAfter): "OGS answered HTTP \(code)" + (retryAfter.map { "; pausing \(Int($0.inSeconds))s" } ?? "")
        case .malformed(let reason): "OGS sent malformed JSON: \(reason)"
        }
    }
}
