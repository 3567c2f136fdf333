import ArgumentParser
import Foundation
import Logging
import OTel
import ServiceLifecycle
import Tracing

/// `--otlp-endpoint`: the daemon's traces, exported over OTLP/HTTP (protobuf) by swift-otel.
///
/// Off unless a collector is named, by the flag or by OpenTelemetry's own variables: a daemon
/// must not try to reach a collector nobody runs. Once on, the standard `OTEL_*` variables
/// (sampler, service name, batch timing, headers) apply as in any OpenTelemetry SDK.
struct TracingOptions: ParsableArguments {
    @Option(
        name: .long,
        help:
            "Export traces over OTLP/HTTP to this collector (e.g. http://127.0.0.1:4318); also OTEL_EXPORTER_OTLP_ENDPOINT. Off when neither is set."
    )
    var otlpEndpoint: String?

    static let endpointVariables = ["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"]

    /// The tracer and the service that exports its spans (run it in the daemon's service group,
    /// where it flushes what is left at shutdown); nil: tracing is off.
    func backend(environment: [String: String], logger: Logger) throws -> Daemon.Tracing? {
        let named = Self.endpointVariables.contains { environment[$0].map { !$0.isEmpty } ?? false }
        guard otlpEndpoint != nil || named, environment["OTEL_SDK_DISABLED"]?.lowercased() != "true" else { return nil }
        if let otlpEndpoint {
            guard otlpEndpoint.hasPrefix("http://") || otlpEndpoint.hasPrefix("https://") else {
                throw ValidationError("--otlp-endpoint must be an http:// or https:// URL, e.g. http://127.0.0.1:4318")
            }
            // The flag wins over the environment, as every other flag does; swift-otel reads the
            // per-signal variable first, and takes it as the whole URL.
            setenv(Self.endpointVariables[0], (otlpEndpoint.hasSuffix("/") ? otlpEndpoint : otlpEndpoint + "/") + "v1/traces", 1)
        }
        var configuration = OTel.Configuration.default
        configuration.serviceName = "pushpipe"
        configuration.logs.enabled = false
        configuration.metrics.enabled = false
        configuration.traces.enabled = true
        configuration.traces.otlpExporter.protocol = .httpProtobuf
        configuration.diagnosticLogger = .custom(logger)
        configuration.diagnosticLogLevel = .warning
        let backend = try OTel.makeTracingBackend(configuration: configuration)
        logger.notice(
            "tracing: spans exported over OTLP/HTTP to \(otlpEndpoint ?? Self.endpointVariables.compactMap { environment[$0] }.first ?? "")"
        )
        return Daemon.Tracing(tracer: backend.factory, exporter: backend.service)
    }
}
