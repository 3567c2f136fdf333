import Foundation
import PushPipeCore
import PushPipePostgres
import PushPipeSQLite
import PushPipeTesting

/// The soak's pipelines: two written here (events, replies), and the shipped OGS pipeline
/// as it is. Every payload carries the id the ledger counts by.
enum SoakPipelines {
    static let users = 20

    static let transport = transport(delivery: "attempts: 30, backoff: 20ms, max_backoff: 500ms, drain_timeout: 1s")

    /// - Parameter timeout: APNs' answer within it or the send is made again (it may have arrived).
    static func transport(delivery: String, timeout: String = "2s") -> String {
        """
        transport:
          type: apns
          team_id: "${APNS_TEAM_ID}"
          key_id: "${APNS_KEY_ID}"
          key_path: "${APNS_KEY_PATH}"
          bundle_id: com.example.soak
          base_url: "${APNS_BASE_URL}"
          ca_file: "${PUSHPIPE_CA_FILE}"
          timeout: \(timeout)
        delivery: {\(delivery)}
        """
    }

    /// - Parameter eventsTitle: the events pipeline's alert title (a reload changes it).
    static func write(into directory: TemporaryDirectory, transport: String = transport, eventsTitle: String = "Soak") throws {
        try directory.write(
            "pipelines/soak-events.yaml",
            """
            pipeline: soak-events
            routes:
              - {action: register, path: /soak/register, user_field: user_id, token_field: device_token, token_kind: device, limits: {per_client: 'off'}}
            sources:
              - {type: http.event, path: /soak/events, id_field: id}
            renderer: {type: apns.alert, title: \(eventsTitle), body: "event {{id}}", custom: {id: {$from: id}}}
            \(transport)
            """
        )
        try directory.write(
            "pipelines/soak-replies.yaml",
            """
            pipeline: soak-replies
            routes:
              - {action: register, path: /soak/register-apns, user_field: device_token, token_field: apns_token, token_kind: device, replace: true, limits: {per_client: 'off'}}
            sources:
              - {type: reply.folder, path: "${SOAK_REPLY_DIR}", rescan_interval: 5s}
            renderer: {type: apns.alert, title: Sven, body: "{{text}}", custom: {message_id: {$from: message_id}}}
            \(transport)
            """
        )
        try writeTimed(into: directory, transport: transport)
        let shipped = try String(contentsOfFile: "pipelines/ogs-turns.yaml", encoding: .utf8)
        try directory.write("pipelines/ogs-turns.yaml", shipped)
        try FileManager.default.createDirectory(atPath: directory.file("replies"), withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: directory.file("staging"), withIntermediateDirectories: true)
    }

    /// Timing under chaos (issue 49): sends at an instant that then wait for a window open in
    /// even minutes (UTC), and digests of 5 s per user that carry their events' ids.
    static func writeTimed(into directory: TemporaryDirectory, transport: String) throws {
        let evenMinutes = stride(from: 0, to: 1440, by: 2).map { "{start: \"\(DailySpan.text($0))\", end: \"\(DailySpan.text($0 + 1))\"}" }
        try writeTimed(
            "scheduled",
            filters: [
                "{type: timing.schedule, at_field: send_at}", "{type: timing.window, windows: [\(evenMinutes.joined(separator: ", "))]}",
            ],
            renderer: #"{type: apns.alert, title: Scheduled, body: "event {{id}}", custom: {id: {$from: id}}}"#,
            into: directory,
            transport: transport
        )
        try writeTimed(
            "digest",
            filters: ["{type: timing.digest, key_field: post, window: 5s, close_at: 20, max_items: 20, keep: first}"],
            renderer: #"{type: apns.alert, title: Digest, body: "{{digest.count}} new", custom: {items: {$from: digest.items}}}"#,
            into: directory,
            transport: transport
        )
    }

    /// `soak-<name>`: events posted to `/soak/<name>`, users registered at `/soak/<name>/register`.
    private static func writeTimed(_ name: String, filters: [String], renderer: String, into directory: TemporaryDirectory, transport: String) throws
    {
        try directory.write(
            "pipelines/soak-\(name).yaml",
            """
            pipeline: soak-\(name)
            routes:
              - {action: register, path: /soak/\(name)/register, user_field: user_id, token_field: device_token, token_kind: device, limits: {per_client: 'off'}}
            sources:
              - {type: http.event, path: /soak/\(name), id_field: id}
            filters:
            \(filters.map { "  - \($0)" }.joined(separator: "\n"))
            renderer: \(renderer)
            \(transport)
            """
        )
    }

    /// Route and body of each registration: every events user (on the timed pipelines too),
    /// user-0 also with a dead token, one Sven install, the OGS player.
    static func registrations(live: String, dead: String, player: Int64) -> [(String, JSON)] {
        var registrations: [(String, JSON)] = (0..<users).flatMap { user in
            ["/soak/register", "/soak/scheduled/register", "/soak/digest/register"].map {
                ($0, ["user_id": .string("user-\(user)"), "device_token": .string(live)] as JSON)
            }
        }
        registrations.append(("/soak/register", ["user_id": "user-0", "device_token": .string(dead)]))
        registrations.append(("/soak/register-apns", ["device_token": "install-1", "apns_token": .string(live)]))
        registrations.append(("/register", ["user_id": .int(player), "device_token": .string(live)]))
        return registrations
    }
}
