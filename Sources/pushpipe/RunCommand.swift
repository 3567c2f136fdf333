import ArgumentParser
import Foundation
import PushPipeCore
import PushPipeHTTP
import PushPipeSQLite
import PushPipeStages

struct RunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "run", abstract: "Run the daemon on the pipelines.")

    @Argument(help: "Pipeline files; all of --pipelines when none are given.")
    var pipelineFiles: [String] = []

    @Option(name: .long, help: "Folder of pipeline files.")
    var pipelines = "pipelines"

    @OptionGroup var options: ConfigurationOptions

    @OptionGroup var storeOptions: StoreOptions

    @OptionGroup var tracingOptions: TracingOptions

    @Option(name: .long, help: "Address to listen on (HOST:PORT; port 0 picks a free one).")
    var listen = "127.0.0.1:8080"

    @Option(name: .long, help: "Admin listener for operators: /metrics, /healthz, /readyz, /tap and the status page (HOST:PORT, or off).")
    var adminListen = "127.0.0.1:9090"

    @Option(name: .long, help: "A proxy (an IP address) whose X-Forwarded-For names the client, for per-client limits; repeat for several.")
    var trustedProxy: [String] = []

    @Option(
        name: .long,
        help: "How long a connection may take to send a whole request (headers and body), from its start or its last response: 30s, 2m, or seconds."
    )
    var requestTimeout = "30s"

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Bearer token the admin listener asks for on /tap, the status page and /metrics (also PUSHPIPE_ADMIN_TOKEN). Required to listen beyond "
                + "loopback."
        )
    )
    var adminToken: String?

    @Flag(name: .long, help: "Leave /metrics open without the admin token, for a scraper.")
    var adminMetricsPublic = false

    @Option(name: .long, help: "Taps (pushpipe tap) streaming at once; the next one gets 429.")
    var adminMaxTaps = 8

    @Option(
        name: .long,
        help: ArgumentHelp(
            "An origin (https://host:port) that URLs users chose may name although it is on loopback or a private network: a stand-in, an internal "
                + "push gateway. Repeat for several; none by default."
        )
    )
    var allowPrivateEndpoint: [String] = []

    @Flag(name: .long, help: "Print the requests transports would send instead of sending; record nothing as delivered.")
    var dryRun = false

    func run() async throws {
        let logger = options.makeLogger()
        let (host, port) = try Self.address(listen, option: "--listen", example: "127.0.0.1:8080")
        let admin = adminListen == "off" ? nil : try Self.address(adminListen, option: "--admin-listen", example: "127.0.0.1:9090")
        guard let timeout = SchemaValidator.parseDuration(requestTimeout), timeout >= 1 else {
            throw ValidationError("--request-timeout must be a duration from 1s to a year, e.g. 30s (got '\(requestTimeout)')")
        }
        let adminAccess = AdminAccess(
            token: adminToken ?? ProcessInfo.processInfo.environment["PUSHPIPE_ADMIN_TOKEN"],
            metricsPublic: adminMetricsPublic,
            maximumTaps: adminMaxTaps
        )
        if let admin {
            do {
                try adminAccess.checkBinding(host: admin.host)
            } catch {
                FileHandle.standardError.write(Data("pushpipe: not starting: \(error)\n".utf8))
                throw ExitCode(1)
            }
        }
        for origin in allowPrivateEndpoint where EgressPolicy.origin(of: origin) == nil || !origin.lowercased().hasPrefix("https://") {
            throw ValidationError("--allow-private-endpoint must be an https origin, e.g. https://127.0.0.1:8443 (got '\(origin)')")
        }
        let paths = pipelineFiles.isEmpty ? [pipelines] : pipelineFiles
        let location = try storeOptions.location()
        let tracing = try tracingOptions.backend(environment: ProcessInfo.processInfo.environment, logger: logger)
        let daemon = Daemon(
            options: .init(
                pipelinePaths: paths,
                pluginsDirectory: options.pluginsDirectory(forPipelinesIn: paths),
                store: location,
                host: host,
                port: port,
                mode: dryRun ? .dryRun : .live,
                environment: ProcessInfo.processInfo.environment,
                admin: admin,
                adminAccess: adminAccess,
                protection: HTTPHost.Protection(trustedProxies: Set(trustedProxy), requestTimeout: .seconds(timeout)),
                egress: EgressPolicy(privateOrigins: allowPrivateEndpoint)
            ),
            builtins: PushPipeCommand.stages,
            webhookPoster: StandardWebhookPoster(),
            identityLookup: HTTPIdentityLookup(),
            tracing: tracing,
            logger: logger
        )
        do {
            try await daemon.run()
        } catch let error as ConfigurationError {
            printDiagnostics(error.diagnostics)
            FileHandle.standardError.write(Data("pushpipe: not starting: \(error.diagnostics.count) error(s)\n".utf8))
            throw ExitCode(1)
        } catch let error as StateLockError {
            FileHandle.standardError.write(Data("pushpipe: not starting: \(error)\n".utf8))
            throw ExitCode(1)
        }
    }

    static func address(_ text: String, option: String, example: String) throws -> (host: String, port: Int) {
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]), (0...65535).contains(port) else {
            throw ValidationError("\(option) must be HOST:PORT, e.g. \(example)")
        }
        let host = text[..<colon]
        // `[::1]:9090`: the brackets only separate an IPv6 address from its port; the resolver wants it bare.
        if host.hasPrefix("["), host.hasSuffix("]") { return (String(host.dropFirst().dropLast()), port) }
        return (String(host), port)
    }
}
