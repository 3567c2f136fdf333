import Foundation
import Logging
import Subprocess
import Synchronization

#if canImport(System)
import System
#else
import SystemPackage
import PushPipeCore
#endif

/// One long-lived plugin child process per stage instance, speaking newline-delimited JSON
/// (see docs/plugins.md). Requests carry ids; responses name them; a crashed process is
/// restarted with backoff and the requests it held fail, so the pipeline keeps running.
public final class PluginProcess: Sendable {
    public let manifest: PluginManifest
    let configuration: JSON
    let pipeline: String
    let stage: String

    struct State {
        var writer: AsyncStream<String>.Continuation?
        var pending: [Int64: CheckedContinuation<JSON, any Error>] = [:]
        var readyWaiters: [Int64: CheckedContinuation<Void, any Error>] = [:]
        var nextID: Int64 = 1
        var starts = 0
        var stopped = false
        var eventHandler: (@Sendable (JSON) async -> Void)?
        /// Where restarts and timeouts are counted: the running pipeline's.
        var telemetry: Telemetry = .unobserved
    }

    private let state = Mutex(State())

    init(manifest: PluginManifest, configuration: JSON, pipeline: String, stage: String) {
        self.manifest = manifest
        self.configuration = configuration
        self.pipeline = pipeline
        self.stage = stage
    }

    /// How many times the process was started (1 + restarts).
    public var starts: Int { state.withLock { $0.starts } }

    func setEventHandler(_ handler: @escaping @Sendable (JSON) async -> Void) {
        state.withLock { $0.eventHandler = handler }
    }

    /// Keeps the process running until cancelled, restarting it after crashes.
    public func run(context: StageContext) async {
        signal(SIGPIPE, SIG_IGN)
        state.withLock { $0.telemetry = context.telemetry }
        var logger = context.logger
        logger[metadataKey: "plugin"] = .string(manifest.name)
        var backoff = 0.1
        while !Task.isCancelled {
            let started = ContinuousClock.now
            state.withLock { $0.starts += 1 }
            var exit = "exited"
            do {
                exit = try await runOnce(logger: logger)
            } catch {
                exit = "could not run: \(error)"
            }
            detach(reason: "plugin \(manifest.name) \(exit)")
            if Task.isCancelled { break }
            if ContinuousClock.now - started > .seconds(10) { backoff = 0.1 }
            logger.error("plugin \(exit); restarting in \(String(format: "%.1f", backoff))s")
            count(.pluginRestarts)
            try? await Task.sleep(for: .seconds(backoff))
            backoff = min(backoff * 2, 5)
        }
        let waiters = state.withLock { state in
            state.stopped = true
            defer { state.readyWaiters.removeAll() }
            return Array(state.readyWaiters.values)
        }
        for waiter in waiters { waiter.resume(throwing: StageError(.unavailable, stage: stage, "plugin \(manifest.name) stopped")) }
    }

    /// The daemon's environment without what is the daemon's alone: the store's URL (its
    /// password), the admin token, and systemd's notify socket. A plugin's own variables are
    /// named in its manifest's config, from the daemon's environment.
    static let environment = Environment.inherit.updating([
        "PUSHPIPE_STORE": nil, "PUSHPIPE_ADMIN_TOKEN": nil, "NOTIFY_SOCKET": nil,
    ])

    private func runOnce(logger: Logger) async throws -> String {
        let (lines, writer) = AsyncStream<String>.makeStream()
        let program = manifest.command[0]
        let executable: Executable =
            program.contains("/")
            ? .path(FilePath(program.hasPrefix("/") ? program : "\(manifest.directory)/\(program)"))
            : .name(program)
        let result = try await Subprocess.run(
            executable,
            arguments: Arguments(Array(manifest.command.dropFirst())),
            environment: Self.environment,
            workingDirectory: FilePath(manifest.directory),
            platformOptions: Self.platformOptions,
            input: .inputWriter,
            output: .sequence,
            error: .sequence
        ) { execution in
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    for try await line in execution.standardError.strings() where !line.isEmpty {
                        logger.warning("\(line)", metadata: ["stream": "stderr"])
                    }
                }
                group.addTask {
                    for await line in lines { _ = try await execution.standardInputWriter.write(line + "\n") }
                }
                let configure: JSON = ["id": 0, "type": "configure", "pipeline": .string(pipeline), "stage": .string(stage), "config": configuration]
                writer.yield(configure.compactText)
                attach(writer)
                for try await line in execution.standardOutput.strings(bufferingPolicy: .maxLineLength(Self.longestAnswer)) {
                    await receive(line, logger: logger)
                }
                writer.finish()
                group.cancelAll()
            }
        }
        return "exited with \(result.terminationStatus)"
    }

    /// Bytes one answer line may have: a renderer's answer for a broadcast page of 1,000 users
    /// is larger than swift-subprocess's default line limit, past which the plugin is restarted.
    static let longestAnswer = 16 * 1024 * 1024

    /// A process group of its own: a terminal's Ctrl-C (SIGINT to its foreground group) reaches
    /// the daemon only, which drains and then stops its plugins itself, instead of every plugin
    /// dying at once (Python with a `KeyboardInterrupt` traceback) under the events it holds.
    /// A plugin still ends with the daemon: it is killed when its stage stops, and a daemon that
    /// is killed closes the plugin's stdin, on whose end a plugin exits (docs/plugins.md).
    static var platformOptions: PlatformOptions {
        var options = PlatformOptions()
        options.processGroupID = 0
        return options
    }

    private func attach(_ writer: AsyncStream<String>.Continuation) {
        let waiters = state.withLock { state in
            state.writer = writer
            defer { state.readyWaiters.removeAll() }
            return Array(state.readyWaiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    private func detach(reason: String) {
        let pending = state.withLock { state in
            state.writer?.finish()
            state.writer = nil
            defer { state.pending.removeAll() }
            return Array(state.pending.values)
        }
        for request in pending { request.resume(throwing: StageError(.pluginFailed, stage: stage, reason)) }
    }

    private func receive(_ line: String, logger: Logger) async {
        guard !line.isEmpty else { return }
        guard let message = try? JSON.parse(Data(line.utf8), maximumDepth: JSON.acceptedDepth), case .object = message else {
            logger.warning("plugin wrote a line that is not a JSON object; ignored", metadata: ["line": .string(String(line.prefix(200)))])
            return
        }
        if message["type"]?.stringValue == "event", let handler = state.withLock({ $0.eventHandler }) {
            await handler(message["event"] ?? .null)
            return
        }
        guard let id = message["id"]?.intValue else { return }
        guard let request = state.withLock({ $0.pending.removeValue(forKey: id) }) else {
            if id != 0 { logger.debug("answer to request \(id) came after its timeout; ignored") }
            return
        }
        if let error = message["error"] {
            request.resume(throwing: StageError(.pluginFailed, stage: stage, "plugin \(manifest.name): \(error.textValue ?? "error")"))
        } else {
            request.resume(returning: message["result"] ?? .null)
        }
    }

    /// Sends one request and waits for its answer, at most the manifest's timeout.
    public func request(_ type: String, _ fields: [String: JSON]) async throws -> JSON {
        let timeout = manifest.timeout
        return try await withThrowingTaskGroup(of: JSON.self) { group in
            group.addTask { try await self.exchange(type, fields) }
            group.addTask {
                try await Task.sleep(for: timeout)
                self.count(.pluginTimeouts)
                throw StageError(.pluginTimeout, stage: self.stage, "plugin \(self.manifest.name) gave no answer within \(timeout.inSeconds)s")
            }
            defer { group.cancelAll() }
            return try await group.next()!
        }
    }

    private func count(_ metric: Metric) {
        state.withLock { $0.telemetry }.increment(metric, [("pipeline", pipeline), ("stage", stage), ("plugin", manifest.name)])
    }

    private func exchange(_ type: String, _ fields: [String: JSON]) async throws -> JSON {
        let id = state.withLock { state in
            defer { state.nextID += 1 }
            return state.nextID
        }
        try await waitUntilRunning(id: id)
        var message = fields
        message["id"] = .int(id)
        message["type"] = .string(type)
        let line = JSON.object(message).compactText
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let sent = state.withLock { state -> Bool in
                    guard let writer = state.writer, !Task.isCancelled else { return false }
                    state.pending[id] = continuation
                    writer.yield(line)
                    return true
                }
                if !sent { continuation.resume(throwing: StageError(.pluginFailed, stage: stage, "plugin \(manifest.name) is not running")) }
            }
        } onCancel: {
            state.withLock { $0.pending.removeValue(forKey: id) }?.resume(throwing: CancellationError())
        }
    }

    private func waitUntilRunning(id: Int64) async throws {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let ready = state.withLock { state -> Bool? in
                    if state.writer != nil { return true }
                    if state.stopped || Task.isCancelled { return nil }
                    state.readyWaiters[id] = continuation
                    return false
                }
                switch ready {
                case true: continuation.resume()
                case nil: continuation.resume(throwing: StageError(.unavailable, stage: stage, "plugin \(manifest.name) is not running"))
                default: break
                }
            }
        } onCancel: {
            state.withLock { $0.readyWaiters.removeValue(forKey: id) }?.resume(throwing: CancellationError())
        }
    }
}
