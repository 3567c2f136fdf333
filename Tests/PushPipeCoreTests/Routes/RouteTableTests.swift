import Foundation
import PushPipeCore
import PushPipeSQLite
import PushPipeTesting
import Testing

/// Which route a request reaches: literal routes are found by their path, and the answer is
/// the one matching every route in order gives (literal before parameters, 405 with the methods).
@Suite struct RouteTableTests {
    func table(_ routes: [(String, String)], store: SQLiteStore) -> RouteTable {
        var table = RouteTable()
        for (method, path) in routes {
            table.add(
                RouteDefinition(method: method, path: path) { _, _ in RouteResponse(["route": .string("\(method) \(path)")]) },
                context: RouteContext(pipeline: "p", store: store, sink: RefusingEventSink())
            )
        }
        return table
    }

    func found(_ lookup: RouteTable.Lookup) -> String? {
        guard case .found(let entry, let parameters) = lookup else { return nil }
        return "\(entry.route.method) \(entry.route.path)" + parameters.sorted { $0.key < $1.key }.map { " \($0.key)=\($0.value)" }.joined()
    }

    @Test func literalRoutesWinAndTheRestMatchInOrder() async throws {
        let directory = try TemporaryDirectory("route-table")
        let store = try SQLiteStore(path: directory.file("state.sqlite"))
        // Parameters first in the file: the table puts the literal routes first all the same.
        let routes = table(
            [("GET", "/users/:id"), ("GET", "/users/me"), ("POST", "events/"), ("GET", "/events/:id"), ("DELETE", "/users/me")],
            store: store
        )
        #expect(found(routes.lookup(method: "GET", path: "/users/me")) == "GET /users/me")
        #expect(found(routes.lookup(method: "DELETE", path: "/users/me")) == "DELETE /users/me")
        #expect(found(routes.lookup(method: "GET", path: "/users/ann")) == "GET /users/:id id=ann")
        #expect(found(routes.lookup(method: "POST", path: "/events")) == "POST events/", "a path written without its first slash")
        #expect(found(routes.lookup(method: "POST", path: "//events/")) == "POST events/", "empty segments are no segments")
        #expect(found(routes.lookup(method: "GET", path: "/events/e%2F1")) == "GET /events/:id id=e/1")
        #expect(found(routes.lookup(method: "HEAD", path: "/users/me")) == "GET /users/me", "HEAD is served by GET")
        // A HEAD route of its own after the GET one: the scan's answer, the first of the two.
        var withHead = routes
        withHead.add(
            RouteDefinition(method: "HEAD", path: "/users/me") { _, _ in RouteResponse([:]) },
            context: RouteContext(pipeline: "p", store: store, sink: RefusingEventSink())
        )
        #expect(found(withHead.lookup(method: "HEAD", path: "/users/me")) == "GET /users/me")
        guard case .methodNotAllowed(let allowed) = routes.lookup(method: "PUT", path: "/users/me") else {
            Issue.record("PUT /users/me is not allowed")
            return
        }
        #expect(allowed == ["DELETE", "GET"], "the literal route's methods and the parameter route's")
        guard case .methodNotAllowed(let onEvents) = routes.lookup(method: "GET", path: "/events") else {
            Issue.record("GET /events is not allowed")
            return
        }
        #expect(onEvents == ["POST"])
        guard case .notFound = routes.lookup(method: "GET", path: "/nowhere") else {
            Issue.record("/nowhere is no route")
            return
        }
        try await store.close()
    }
}
