import CoreMetrics
import Synchronization
import Tracing

/// What operators see of one daemon: its metrics (through the swift-metrics API; the admin
/// listener exports them), its traces (through swift-distributed-tracing, when a tracer is
/// given), its live tap and its recent activity for the status page.
///
/// Each daemon (and each test) owns one, with its own metrics factory, instead of bootstrapping
/// the process-wide `MetricsSystem`: several daemons in one test process must not count into
/// each other's numbers.
public final class Telemetry: Sendable {
    /// Where the metric handles come from: the exporter's factory, or one that discards.
    public let metrics: any MetricsFactory
    /// Spans of events, stages and attempts; nil: tracing is off.
    public let tracer: EventTracer?
    public let tap: TapHub
    public let activity = RecentActivity()
    private let counters = Mutex<[String: CoreMetrics.Counter]>([:])
    private let gauges = Mutex<[String: CoreMetrics.Gauge]>([:])
    private let timers = Mutex<[String: CoreMetrics.Timer]>([:])
    /// Distinct provider reasons seen per metric: past the cap they count as `other`, so a
    /// misbehaving server cannot grow the exposition without bound.
    private let reasons = Mutex<Set<String>>([])
    static let maximumReasons = 100

    /// Shared by whatever runs without an operator (dry runs, pipeline tests): it counts, and
    /// nobody reads it.
    public static let unobserved = Telemetry()

    public init(metrics: any MetricsFactory = NOOPMetricsHandler.instance, tracer: (any Tracer)? = nil) {
        self.metrics = metrics
        self.tracer = tracer.map(EventTracer.init)
        tap = TapHub(dropped: CoreMetrics.Counter(label: Metric.tapRecordsDropped.rawValue, dimensions: [], factory: metrics))
    }

    public func increment(_ metric: Metric, _ labels: [(String, String)], by amount: Int = 1) {
        counter(metric, labels).increment(by: amount)
    }

    public func counter(_ metric: Metric, _ labels: [(String, String)]) -> CoreMetrics.Counter {
        Self.cached(counters, Self.key(metric, labels)) { CoreMetrics.Counter(label: metric.rawValue, dimensions: labels, factory: metrics) }
    }

    public func set(_ metric: Metric, _ labels: [(String, String)], to value: Int) {
        Self.cached(gauges, Self.key(metric, labels)) { CoreMetrics.Gauge(label: metric.rawValue, dimensions: labels, factory: metrics) }
            .record(value)
    }

    public func timer(_ metric: Metric, _ labels: [(String, String)]) -> CoreMetrics.Timer {
        Self.cached(timers, Self.key(metric, labels)) { CoreMetrics.Timer(label: metric.rawValue, dimensions: labels, factory: metrics) }
    }

    /// Metric handles are made once per series: making one looks it up in the registry.
    static func cached<Handle>(_ cache: borrowing Mutex<[String: Handle]>, _ key: String, make: () -> Handle) -> Handle {
        cache.withLock { handles in
            if let handle = handles[key] { return handle }
            let handle = make()
            handles[key] = handle
            return handle
        }
    }

    /// A provider reason's code as a label value, or `other` once too many were seen.
    public func reasonLabel(_ code: String?) -> String {
        guard let code else { return "" }
        return reasons.withLock { seen in
            if seen.contains(code) { return code }
            guard seen.count < Self.maximumReasons else { return "other" }
            seen.insert(code)
            return code
        }
    }

    static func key(_ metric: Metric, _ labels: [(String, String)]) -> String {
        var key = metric.rawValue
        for (name, value) in labels {
            key += "\u{1}" + name + "=" + value
        }
        return key
    }
}
