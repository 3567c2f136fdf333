/// Every metric pushpipe exports, with the labels it carries. Names follow Prometheus
/// conventions (`_total` counters, `_seconds` histograms); `docs/operations.md` explains each.
/// A family always has the same label names: Prometheus (and swift-prometheus) refuse a mix.
public enum Metric: String, Sendable, CaseIterable {
    // Sources and filters (labels: pipeline, stage)
    case eventsReceived = "pushpipe_events_received_total"
    case eventsRecovered = "pushpipe_events_recovered_total"
    /// + reason: the filter's type and its reason code.
    case eventsDropped = "pushpipe_events_dropped_total"
    case eventsFailed = "pushpipe_events_failed_total"
    /// + type, reason: events a timing filter made wait (`scheduled`, `deferred`, `batched`), by its code.
    case holds = "pushpipe_events_held_total"
    case notificationsRendered = "pushpipe_notifications_rendered_total"
    // Deliveries (labels: pipeline, transport, + outcome, reason)
    case deliveries = "pushpipe_deliveries_total"
    case deliveryRetries = "pushpipe_delivery_retries_total"
    case deliveryLatency = "pushpipe_delivery_latency_seconds"
    case transportPauses = "pushpipe_transport_pauses_total"
    case tokensPruned = "pushpipe_tokens_pruned_total"
    // Pipeline state, read at each scrape (labels: pipeline)
    case eventsQueued = "pushpipe_events_queued"
    case eventsInFlight = "pushpipe_events_in_flight"
    /// Events that failed for good, kept for a replay (read from the store at each scrape).
    case deadLetters = "pushpipe_dead_letters"
    /// Events waiting in the store for their instant, a send window or a digest's end (read from the store at each scrape).
    case eventsHeld = "pushpipe_events_held"
    /// labels: pipeline, transport
    case providerConnections = "pushpipe_provider_connections"
    // Pollers (labels: pipeline, stage, + reason for failures)
    case pollerChecks = "pushpipe_poller_checks_total"
    case pollerFailures = "pushpipe_poller_failures_total"
    case pollerRateLimitWaits = "pushpipe_poller_rate_limit_waits_total"
    // Digests (labels: pipeline, stage): opened by a first event, closed when one carries it on.
    case digestsOpened = "pushpipe_digests_opened_total"
    case digestsClosed = "pushpipe_digests_closed_total"
    // Plugins (labels: pipeline, stage, plugin)
    case pluginRestarts = "pushpipe_plugin_restarts_total"
    case pluginTimeouts = "pushpipe_plugin_timeouts_total"
    // The daemon (labels: result / store)
    case reloads = "pushpipe_reloads_total"
    case storeCommitLatency = "pushpipe_store_commit_seconds"
    /// SQLite only (labels: kind): WAL checkpoints.
    case storeCheckpointLatency = "pushpipe_store_checkpoint_seconds"
    /// SQLite only (no labels): the WAL's size when the last checkpoint ran.
    case storeWALFrames = "pushpipe_store_wal_frames"
    /// Outcomes a webhook took or will be sent again (labels: pipeline, result `taken` | `retried` | `expired`).
    case webhookOutcomes = "pushpipe_webhook_outcomes_total"
    /// Tap records not sent because a tap was not reading (no labels).
    case tapRecordsDropped = "pushpipe_tap_records_dropped_total"
    /// Always 1 (labels: version, allocator): joins a daemon's series to its build.
    case buildInfo = "pushpipe_build_info"

    /// Histogram buckets, for the latencies: a push takes milliseconds on a good day and
    /// minutes when a provider asks for backoff; a commit takes micro- to milliseconds.
    public var buckets: [Duration]? {
        switch self {
        case .deliveryLatency:
            [
                .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250),
                .milliseconds(500), .seconds(1), .seconds(2.5), .seconds(5), .seconds(10), .seconds(30), .seconds(60), .seconds(300),
            ]
        case .storeCommitLatency, .storeCheckpointLatency:
            [
                .microseconds(100), .microseconds(250), .microseconds(500), .milliseconds(1), .milliseconds(2.5), .milliseconds(5),
                .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250), .seconds(1),
            ]
        default: nil
        }
    }
}
