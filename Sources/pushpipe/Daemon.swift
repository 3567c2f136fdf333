import Foundation
import Logging
import PushPipeCore
import PushPipeHTTP
import PushPipePlugins
import PushPipeStores
import ServiceLifecycle
import Tracing
import UnixSignals

/// `pushpipe run`: the pipelines, the HTTP host and the store under one service group.
/// SIGTERM/SIGINT drain and stop; SIGHUP reloads, keeping the old configuration when the
/// new one has any error. A SQLite state is locked for the daemon's life, and the pipelines
/// start only once every listener listens, so a daemon that cannot start claims nothing.
public final class Daemon: Sendable {
    public struct Options: Sendable {
        public var pipelinePaths: [String]
        public var pluginsDirectory: String
        public var store: StoreLocation
        public var host: String
        public var port: Int
        public var mode: RunMode
        public var environment: [String: String]
        /// The admin listener (metrics, health, tap, status page); nil: off.
        public var admin: (host: String, port: Int)?
        /// Who may read it.
        public var adminAccess: AdminAccess
        /// What the app listener guards against (trusted proxies, the request timeout).
        public var protection: HTTPHost.Protection
        /// Where requests to URLs users chose may go (`--allow-private-endpoint`).
        public var egress: EgressPolicy

        public init(
            pipelinePaths: [String],
            pluginsDirectory: String,
            store: StoreLocation,
            host: String,
            port: Int,
            mode: RunMode,
            environment: [String: String],
            admin: (host: String, port: Int)? = nil,
            adminAccess: AdminAccess = AdminAccess(token: nil),
            protection: HTTPHost.Protection = HTTPHost.Protection(),
            egress: EgressPolicy = .standard
        ) {
            self.protection = protection
            self.egress = egress
            self.admin = admin
            self.adminAccess = adminAccess
            self.pipelinePaths = pipelinePaths
            self.pluginsDirectory = pluginsDirectory
            self.store = store
            self.host = host
            self.port = port
            self.mode = mode
            self.environment = environment
        }
    }

    /// Where events' spans go (`TracingOptions`): the tracer, and the service that exports them.
    public struct Tracing: Sendable {
        public var tracer: any Tracer
        public var exporter: any Service
    }

    let options: Options
    let builtins: [any Registrable]
    /// Sends pipelines' webhook outcomes (the composition root chooses it, like the stages).
    let webhookPoster: (any WebhookPoster)?
    /// Asks the identity URLs of `auth: {type: identity}` routes (the composition root's HTTP client).
    let identityLookup: (any IdentityLookup)?
    let logger: Logger
    let tracing: Tracing?
    public let telemetry: Telemetry

    public init(
        options: Options,
        builtins: [any Registrable],
        webhookPoster: (any WebhookPoster)? = nil,
        identityLookup: (any IdentityLookup)? = nil,
        tracing: Tracing? = nil,
        logger: Logger
    ) {
        self.identityLookup = identityLookup
        self.tracing = tracing
        telemetry = Telemetry.prometheus(tracer: tracing?.tracer)
        self.webhookPoster = webhookPoster
        self.options = options
        notifier = SystemdNotifier(environment: options.environment)
        self.builtins = builtins
        self.logger = logger
    }

    /// One for the daemon's life: it knows whether readiness was told yet.
    let notifier: SystemdNotifier

    var loader: ConfigLoader {
        ConfigLoader(
            builtins: builtins,
            interpolation: EnvironmentInterpolation(
                environment: options.environment,
                allowsUndefined: options.mode == .dryRun
            ),
            pluginHost: ChildProcessPluginHost(),
            egress: options.egress
        )
    }

    public func load() async -> ConfigLoader.Result {
        await loader.load(pipelineFiles: ConfigLoader.pipelineFiles(in: options.pipelinePaths), pluginsDirectory: options.pluginsDirectory)
    }

    /// An IPv6 address in a URL goes in brackets (`http://[::1]:9090`).
    static func urlHost(_ host: String) -> String { host.contains(":") ? "[\(host)]" : host }

    public func run() async throws {
        telemetry.set(.buildInfo, [("version", BuildInfo.version), ("allocator", ProcessAllocator.name)], to: 1)
        // First, so that a daemon that fails on its configuration or store says which release it is.
        logger.notice("pushpipe \(BuildInfo.version) starting", metadata: ["allocator": .string(ProcessAllocator.name)])
        let initial = await load()
        for diagnostic in initial.diagnostics where diagnostic.severity == .warning { logger.warning("\(diagnostic)") }
        guard !initial.diagnostics.hasErrors else { throw ConfigurationError(initial.diagnostics.errors) }
        // Held until the store is closed: a second daemon on the same SQLite state stops here.
        let lock = try options.store.lockForDaemon()
        defer { lock?.release() }
        let store = try await options.store.open(
            logger: logger,
            observers: telemetry.storeObservers(named: options.store.isPostgres ? "postgres" : "sqlite"),
            lock: lock
        )
        logger.info("store: \(options.store)")
        let storeService = StoreService(store)
        let host = HTTPHost(protection: options.protection, identityLookup: identityLookup, logger: logger)
        let supervisor = PipelineSupervisor(
            initial: initial.pipelines,
            store: store,
            host: host,
            logger: logger,
            mode: options.mode,
            telemetry: telemetry,
            webhookPoster: webhookPoster
        )
        host.setReadiness { await supervisor.readinessProblems() }
        let logger = self.logger
        let options = self.options
        // Each listener tells when it listens; the pipelines start once all of them do.
        let (listening, listened) = AsyncStream<Void>.makeStream()
        let application = ListenerService(
            listener: "app listener",
            address: "\(options.host):\(options.port)",
            option: "--listen HOST:PORT",
            service: host.application(host: options.host, port: options.port) { port in
                listened.yield()
                logger.notice(
                    "listening on http://\(Self.urlHost(options.host)):\(port)",
                    metadata: [
                        "pipelines": .string(initial.pipelines.map(\.name).joined(separator: ",")),
                        "mode": .string(options.mode == .dryRun ? "dry-run" : "live"),
                        "allocator": .string(ProcessAllocator.name),
                        "version": .string(BuildInfo.version),
                    ]
                )
            }
        )
        let reloader = ReloadService(daemon: self, supervisor: supervisor)
        let notifier = self.notifier
        let pipelineCount = initial.pipelines.count
        var adminServices: [ServiceGroupConfiguration.ServiceConfiguration] = []
        if let admin = options.admin {
            let adminHost = AdminHost(
                supervisor: supervisor,
                statusPage: StatusPage(store: "\(options.store)", mode: options.mode),
                access: options.adminAccess,
                logger: logger
            )
            adminServices.append(
                .init(
                    service: ListenerService(
                        listener: "admin listener",
                        address: "\(admin.host):\(admin.port)",
                        option: "--admin-listen HOST:PORT (or --admin-listen off)",
                        service: adminHost.application(host: admin.host, port: admin.port) { port in
                            listened.yield()
                            logger.notice("admin on http://\(Self.urlHost(admin.host)):\(port) (/metrics, /healthz, /readyz, /tap, status page at /)")
                        }
                    )
                )
            )
        }
        // The group stops its services in the reverse of this order: the store first, so it
        // closes last, once the pipelines drained; then the trace exporter, so the spans of the
        // events drained at shutdown are exported too.
        let exporter = tracing.map { [ServiceGroupConfiguration.ServiceConfiguration(service: $0.exporter)] } ?? []
        let group = ServiceGroup(
            configuration: .init(
                services: [.init(service: storeService)] + exporter + [
                    .init(
                        service: AfterListening(listeners: 1 + adminServices.count, listening: listening, service: supervisor) {
                            await supervisor.waitUntilStarted()
                            notifier.ready(status: "serving \(pipelineCount) pipeline(s)")
                        },
                        successTerminationBehavior: .gracefullyShutdownGroup
                    ),
                    .init(service: application),
                    .init(service: reloader, successTerminationBehavior: .ignore),
                ] + adminServices + [
                    .init(service: StopIntakeFirst(supervisor: supervisor, notifier: notifier), successTerminationBehavior: .ignore)
                ],
                gracefulShutdownSignals: [.sigterm, .sigint],
                logger: logger
            )
        )
        do {
            try await group.run()
        } catch {
            try? await storeService.closeIfOpen()
            throw error
        }
        try await storeService.closeIfOpen()
        logger.notice("stopped; store closed")
    }

    /// Loads and validates everything; applies it only when there is no error.
    func reload(supervisor: PipelineSupervisor) async {
        notifier.reloading()
        logger.notice("reloading configuration")
        let result = await load()
        guard !result.diagnostics.hasErrors else {
            telemetry.increment(.reloads, [("result", "rejected")])
            for diagnostic in result.diagnostics { logger.error("\(diagnostic)") }
            logger.error("reload rejected: \(result.diagnostics.errors.count) error(s); the previous configuration keeps running")
            notifier.ready(status: "reload rejected (\(result.diagnostics.errors.count) error(s)); serving the previous configuration")
            return
        }
        await supervisor.apply(result.pipelines)
        telemetry.increment(.reloads, [("result", "ok")])
        logger.notice("reloaded: \(result.pipelines.map(\.name).joined(separator: ", "))")
        notifier.ready(status: "serving \(result.pipelines.count) pipeline(s)")
    }
}

/// Turns SIGHUP into reloads for as long as the daemon runs.
struct ReloadService: Service {
    let daemon: Daemon
    let supervisor: PipelineSupervisor

    func run() async throws {
        let hangups = await UnixSignalsSequence(trapping: .sighup)
        for await _ in hangups.cancelOnGracefulShutdown() {
            await daemon.reload(supervisor: supervisor)
        }
    }
}
