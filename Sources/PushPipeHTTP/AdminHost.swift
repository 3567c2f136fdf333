import Foundation
import Hummingbird
import Logging
import PushPipeCore
import ServiceLifecycle

/// The operator's listener (`--admin-listen`, 127.0.0.1:9090 by default): metrics, health, the
/// live tap and the status page. Apart from the app-facing routes, so that exposing the API
/// to apps never exposes these by accident.
public struct AdminHost: Sendable {
    let supervisor: PipelineSupervisor
    let statusPage: StatusPage
    let access: AdminAccess
    let logger: Logger

    public init(supervisor: PipelineSupervisor, statusPage: StatusPage, access: AdminAccess = AdminAccess(token: nil), logger: Logger) {
        self.access = access
        self.supervisor = supervisor
        self.statusPage = statusPage
        self.logger = logger
    }

    var telemetry: Telemetry { supervisor.telemetry }

    public func application(host: String, port: Int, onRunning: @escaping @Sendable (Int) async -> Void = { _ in }) -> some Service {
        HTTPHost.application(
            responder: Responder(admin: self, host: host),
            serverName: "pushpipe-admin",
            host: host,
            port: port,
            logger: logger,
            onRunning: onRunning
        )
    }

    struct Responder: HTTPResponder {
        let admin: AdminHost
        /// The address it listens on: on loopback, requests must name this machine.
        let host: String

        func respond(to request: Request, context: BasicRequestContext) async throws -> Response {
            if let refusal = admin.access.refusal(request, listenerHost: host) { return refusal }
            guard request.method == .get || request.method == .head else {
                return HTTPHost.response(status: 405, body: RouteError(405, "the admin listener only answers GET", field: "method").body)
            }
            switch request.uri.path {
            case "/metrics":
                admin.supervisor.refreshGauges()
                await admin.supervisor.refreshStoredGauges()
                return Self.text(admin.telemetry.exposition(), contentType: "text/plain; version=0.0.4; charset=utf-8")
            case "/healthz":
                return HTTPHost.response(status: 200, body: ["status": "ok"])
            case "/readyz":
                let (status, body) = Health.readiness(await admin.supervisor.readinessProblems(), withReasons: admin.access.isAuthorized(request))
                return HTTPHost.response(status: status, body: body)
            case "/tap":
                return admin.tap(request)
            case "/", "/status":
                let problems = await admin.supervisor.readinessProblems()
                let deadLetters = await admin.supervisor.latestDeadLetters(limit: 20)
                return Self.text(
                    admin.statusPage.render(supervisor: admin.supervisor, readinessProblems: problems, deadLetters: deadLetters),
                    contentType: "text/html; charset=utf-8"
                )
            default:
                return HTTPHost.response(
                    status: 404,
                    body: RouteError.notFound(
                        "no admin route \(request.uri.path); try /metrics, /readyz, /tap or /",
                        field: "path"
                    ).body
                )
            }
        }

        static func text(_ text: String, contentType: String) -> Response {
            var headers = HTTPFields()
            headers[.contentType] = contentType
            headers[.cacheControl] = "no-store"
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: text)))
        }
    }
}

/// `/healthz` and `/readyz`, the same on both listeners.
public enum Health {
    /// The reasons (a store's error, a missing key file's path) are for operators: the app
    /// listener faces the internet, and tells only the status.
    public static func readiness(_ problems: [String: String], withReasons: Bool) -> (Int, JSON) {
        guard !problems.isEmpty else { return (200, ["status": "ready"]) }
        guard withReasons else { return (503, ["status": "not ready", "error": "not ready"]) }
        return (
            503,
            [
                "status": "not ready", "error": .string("not ready: \(problems.keys.sorted().joined(separator: ", "))"),
                "reasons": .object(problems.mapValues(JSON.string)),
            ]
        )
    }
}
