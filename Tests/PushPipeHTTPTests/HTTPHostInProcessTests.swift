import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import PushPipeSQLite
import PushPipeStages
import PushPipeTesting
import Testing

@testable import PushPipeCore
@testable import PushPipeHTTP

/// The app listener in process (Hummingbird's test framework), with real routes on a real
/// SQLite file: what the host itself answers before any handler runs, and that a handler's
/// error reaches the caller as a typed answer and never as its own words. The daemon tests
/// cover the same host behind a real socket.
@Suite struct HTTPHostInProcessTests {
    struct Secret: Error, CustomStringConvertible { var description: String { "password=hunter2 at db.internal:5432" } }

    /// A host with a real register route, an echo route with a small rate, one with a small body, a route behind a
    /// token and routes that fail, on a store in a temporary directory.
    func withHost(
        routesUp: Bool = true,
        _ body: @escaping @Sendable (HTTPHost, SQLiteStore, any TestClientProtocol) async throws -> Void
    ) async throws {
        let directory = try TemporaryDirectory("http-host")
        let store = try SQLiteStore(path: directory.file("state.sqlite"))
        let host = HTTPHost(logger: Logger(label: "test"))
        if routesUp {
            let context = RouteContext(pipeline: "app", store: store, sink: RefusingEventSink())
            var table = RouteTable()
            table.add(
                try #require(StageRegistry(BuiltinStages.all).routeAction(named: "register")).route([
                    "action": "register", "path": "/register", "user_field": "user_id", "token_field": "token",
                    "token_kind": "device",
                ]),
                context: context
            )
            table.add(
                RouteDefinition(
                    method: "POST",
                    path: "/echo/:id",
                    limits: RouteLimits(perClient: .init(perSecond: 0.001, burst: 2), maxBodyBytes: 64)
                ) { request, _ in
                    RouteResponse(["id": .string(request.parameters["id"] ?? ""), "body": request.body ?? .null])
                },
                context: context
            )
            table.add(
                RouteDefinition(method: "POST", path: "/small", limits: RouteLimits(maxBodyBytes: 64)) { request, _ in
                    RouteResponse(request.body ?? .null)
                },
                context: context
            )
            table.add(
                RouteDefinition(method: "GET", path: "/private", authentication: .token(String(repeating: "s", count: 32))) { _, _ in
                    RouteResponse(["ok": true])
                },
                context: context
            )
            table.add(RouteDefinition(method: "GET", path: "/broken") { _, _ in throw Secret() }, context: context)
            table.add(
                RouteDefinition(method: "GET", path: "/store-away") { _, _ in
                    throw StoreUnavailableError(store: "test", failingFor: .seconds(3))
                },
                context: context
            )
            host.replaceRoutes(table)
        }
        let application = Application(responder: HTTPHost.Responder(host: host), logger: Logger(label: "test"))
        try await withCleanup(
            {
                try await application.test(.router) { client in try await body(host, store, client) }
            },
            cleanup: {
                try? await store.close()
                directory.remove()
            }
        )
    }

    /// Status and body of one request; a body given as JSON is sent as `application/json`.
    func send(
        _ client: any TestClientProtocol,
        _ method: HTTPRequest.Method,
        _ uri: String,
        json: JSON? = nil,
        raw: String? = nil,
        headers: HTTPFields = [:]
    ) async throws -> (status: Int, body: JSON?, headers: HTTPFields) {
        var headers = headers
        var body: ByteBuffer?
        if let json {
            headers[.contentType] = "application/json"
            body = ByteBuffer(data: json.serialized())
        } else if let raw {
            body = ByteBuffer(string: raw)
        }
        let response = try await client.execute(uri: uri, method: method, headers: headers, body: body)
        let text = String(buffer: response.body)
        return (Int(response.status.code), text.isEmpty ? nil : try JSON.parse(Data(text.utf8)), response.headers)
    }

    @Test func beforeThePipelinesAreUpRoutesAnswer503AndHealthAnswers() async throws {
        try await withHost(routesUp: false) { host, _, client in
            let early = try await send(client, .post, "/register", json: ["user_id": "u"])
            #expect(early.status == 503 && early.headers[.retryAfter] == "1" && early.body?["error"]?.stringValue?.contains("starting") == true)
            #expect(try await send(client, .get, "/healthz").status == 200)
            #expect(try await send(client, .get, "/readyz").status == 503, "not ready while starting")
            host.setReadiness { [:] }
            #expect(try await send(client, .get, "/readyz").status == 200)
            host.setReadiness { ["store": "does not answer"] }
            let notReady = try await send(client, .get, "/readyz")
            #expect(notReady.status == 503)
            #expect(notReady.body?.compactText.contains("does not answer") == false, "the public listener tells no reasons")
        }
    }

    @Test func aWrongPathOrMethodIsNamed() async throws {
        try await withHost { _, _, client in
            let missing = try await send(client, .get, "/nowhere")
            #expect(missing.status == 404 && missing.body?["field"] == "path")
            let method = try await send(client, .delete, "/register")
            #expect(method.status == 405 && method.body?["field"] == "method" && method.body?["error"]?.stringValue?.contains("POST") == true)
        }
    }

    @Test func aBadBodyIsRefusedBeforeAnyHandlerRuns() async throws {
        try await withHost { _, _, client in
            let plain = try await send(client, .post, "/small", raw: "{}", headers: [.contentType: "text/plain"])
            #expect(plain.status == 415 && plain.body?["field"] == "content-type")
            let broken = try await send(client, .post, "/small", raw: "{\"a\":", headers: [.contentType: "application/json"])
            #expect(broken.status == 400 && broken.body?["field"] == "body")
            let array = try await send(client, .post, "/small", json: [1, 2])
            #expect(array.status == 422 && array.body?["field"] == "body")
            let large = try await send(client, .post, "/small", json: ["text": .string(String(repeating: "x", count: 100))])
            #expect(large.status == 413 && large.body?["field"] == "body")
            let fits = try await send(client, .post, "/small", json: ["text": "x"])
            #expect(fits.status == 200 && fits.body == ["text": "x"])
        }
    }

    @Test func aClientOverItsRateIsToldWhenToComeBack() async throws {
        try await withHost { _, _, client in
            for id in ["a", "b"] {
                let answer = try await send(client, .post, "/echo/\(id)", json: ["n": 1])
                #expect(answer.status == 200 && answer.body?["id"]?.stringValue == id && answer.body?["body"] == ["n": 1])
            }
            let refused = try await send(client, .post, "/echo/c", json: ["n": 1])
            #expect(refused.status == 429 && Int(refused.headers[.retryAfter] ?? "") ?? 0 >= 1)
        }
    }

    @Test func aRouteBehindATokenLetsOnlyItsHolderIn() async throws {
        try await withHost { _, _, client in
            let anonymous = try await send(client, .get, "/private")
            let wrong = try await send(client, .get, "/private", headers: [.authorization: "Bearer wrong"])
            let right = try await send(client, .get, "/private", headers: [.authorization: "Bearer " + String(repeating: "s", count: 32)])
            #expect(anonymous.status == 401 && wrong.status == 401 && right.status == 200)
        }
    }

    @Test func aHandlersErrorIsAnsweredWithoutItsWords() async throws {
        try await withHost { _, _, client in
            let broken = try await send(client, .get, "/broken")
            #expect(broken.status == 500 && broken.body?["error"] == "internal error")
            #expect(broken.body?.compactText.contains("hunter2") == false)
            let away = try await send(client, .get, "/store-away")
            #expect(away.status == 503 && away.headers[.retryAfter] == "1", "the caller sends it again: nothing was stored")
        }
    }

    @Test func aRegistrationIsStoredAndABadTokenChangesNothing() async throws {
        try await withHost { _, store, client in
            let token = String(repeating: "ab", count: 32)
            #expect(try await send(client, .post, "/register", json: ["user_id": "ann", "token": .string(token.uppercased())]).status == 200)
            #expect(try await store.pipeline("app").tokens(user: "ann", kind: "device").map(\.value) == [token], "stored lower-case")
            let bad = try await send(client, .post, "/register", json: ["user_id": "bob", "token": "not-hex"])
            #expect(bad.status == 400 && bad.body?["field"] == "token")
            #expect(try await store.pipeline("app").tokens(user: "bob", kind: "device").isEmpty)
        }
    }
}
