import CoreMetrics
import Prometheus
import PushPipeCore
import Tracing

extension Telemetry {
    /// A telemetry whose metrics the admin listener's `/metrics` exports, with each duration
    /// metric's buckets as `Metric` declares them; events are traced when a tracer is given.
    public static func prometheus(tracer: (any Tracer)? = nil) -> Telemetry {
        var factory = PrometheusMetricsFactory(registry: PrometheusCollectorRegistry())
        for metric in Metric.allCases { if let buckets = metric.buckets { factory.durationHistogramBuckets[metric.rawValue] = buckets } }
        return Telemetry(metrics: factory, tracer: tracer)
    }

    /// The Prometheus text exposition (format 0.0.4); empty when the metrics are not Prometheus's.
    public func exposition() -> String {
        (metrics as? PrometheusMetricsFactory)?.registry.emitToString() ?? ""
    }
}
