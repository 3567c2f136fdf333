import Foundation
import PushPipeTesting

/// The adversarial chaos soak's two more pipelines (issue 45): Web Push to subscribers some
/// of whose push services are hostile, and broadcasts to thousands through a renderer that
/// fails on random pages.
extension SoakPipelines {
    static func writeAdversarial(into directory: TemporaryDirectory, transport: String) throws {
        try directory.write(
            "pipelines/soak-webpush.yaml",
            """
            pipeline: soak-webpush
            routes:
              - {action: register, path: /soak/web/subscriptions, user_field: user, token_field: subscription, token_format: webpush, token_kind: webpush, limits: {per_client: 'off'}}
            sources:
              - {type: http.event, path: /soak/web/events, id_field: id}
            renderer: {type: webpush, title: Soak, body: "event {{id}}", data: {id: {$from: id}}}
            transport:
              type: webpush
              vapid_key_path: "${VAPID_KEY_PATH}"
              subject: "mailto:chaos-${CHAOS_INSTANCE}@example.com"
              ca_file: "${WEBPUSH_CA_FILE}"
              timeout: 2s
            delivery: {concurrency: 4, attempts: 5, backoff: 20ms, max_backoff: 500ms, drain_timeout: 10s}
            """
        )
        // A short drain: a SIGTERM stops a broadcast between (or in) pages, as a kill does.
        let broadcastTransport = transport.replacingOccurrences(of: "drain_timeout: 60s", with: "drain_timeout: 3s")
        try directory.write(
            "pipelines/soak-broadcast.yaml",
            """
            pipeline: soak-broadcast
            routes:
              - {action: register, path: /soak/broadcast/register, user_field: user_id, token_field: device_token, token_kind: device, limits: {per_client: 'off'}}
            sources:
              - {type: http.event, path: /soak/broadcasts, id_field: id, require_user: false}
            renderer: {type: chaos-flaky-renderer, faults_file: "${CHAOS_RENDER_FAULTS}", rate: 0.2}
            \(broadcastTransport)
            """
        )
        let plugin = "bench/chaos/plugins/chaos-flaky-renderer"
        let target = directory.file("plugins.d/chaos-flaky-renderer")
        try FileManager.default.createDirectory(atPath: directory.file("plugins.d"), withIntermediateDirectories: true)
        if !FileManager.default.fileExists(atPath: target) { try FileManager.default.copyItem(atPath: plugin, toPath: target) }
    }

    /// Only the events pipeline: the SQLite daemon's, which shares no folder or poller with the others.
    static func writeEventsOnly(into directory: TemporaryDirectory, transport: String) throws {
        let scratch = try TemporaryDirectory("chaos-events-only")
        defer { scratch.remove() }
        try write(into: scratch, transport: transport)
        try FileManager.default.createDirectory(atPath: directory.file("pipelines"), withIntermediateDirectories: true)
        try directory.write("pipelines/soak-events.yaml", try String(contentsOfFile: scratch.file("pipelines/soak-events.yaml"), encoding: .utf8))
    }
}
