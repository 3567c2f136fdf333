import Dispatch
import Foundation
import FuzzDriver
import PushPipeCore
import PushPipeSQLite
import PushPipeStages

/// The app routes read what any phone or script sends: a path, a query and a JSON body. Past
/// the host's checks (size, JSON syntax, an object), the route actions parse the rest: path
/// parameters, user ids, tokens, settings, paging. Whatever comes, a request is answered with
/// a status below 500 or refused with a `RouteError` of 4xx naming a field, never a crash or a
/// 5xx; the store is a real SQLite file.
///
/// An input is lines: the route (a number), the path, the query (`a=b&c=d`), the authenticated
/// user (empty for none), then the body.
let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pushpipe-fuzz-routes-\(getpid())").path
nonisolated(unsafe) var table: RouteTable?

/// A throwaway secret: the host checks the JWT, the fuzzer gives the user it would have found.
let jwtAuth: JSON = ["type": "jwt", "secret": "fuzz-secret-fuzz-secret-fuzz-secret-0123"]

/// The routes of the shipped pipelines, as their `routes:` entries say (authentication is the
/// host's: the fourth line stands for what it would have found).
let routeConfigurations: [JSON] = [
    ["action": "register", "path": "/example/register", "user_field": "user_id", "token_kind": "device", "token_field": "device_token"],
    ["action": "settings", "path": "/example/settings/:user_id", "user_param": "user_id", "keys": ["enabled": "boolean"]],
    ["action": "history", "path": "/example/history/:user_id", "user_param": "user_id"],
    ["action": "diagnostics", "path": "/example/diagnostics/:user_id", "user_param": "user_id"],
    ["action": "users-by-token", "path": "/example/users-by-token/:device_token"],
    [
        "action": "register", "path": "/register", "user_field": "user_id", "user_format": "digits", "token_field": "device_token",
        "token_kind": "device",
    ],
    ["action": "diagnostics", "path": "/diagnostics/:user_id", "user_param": "user_id", "user_format": "digits", "token_kind": "device"],
    [
        "action": "register", "path": "/api/users/live-activity-update-token", "auth": jwtAuth, "token_field": "update_token",
        "token_kind": "activity-update",
        "scope_field": "activity_id", "replace": true,
    ],
    [
        "action": "register", "path": "/api/notifications/register", "auth": jwtAuth, "token_field": "fcm_token", "token_format": "opaque",
        "token_kind": "fcm",
    ],
    ["action": "settings", "path": "/api/notifications/settings", "method": "PATCH", "auth": jwtAuth, "keys": ["enabled": "boolean"]],
    ["action": "history", "path": "/api/notifications/history", "auth": jwtAuth],
    [
        "action": "register", "path": "/register-apns", "user_field": "device_token", "user_format": "text", "token_field": "apns_token",
        "token_kind": "device", "replace": true,
    ],
]

struct NoEvents: EventSink {
    struct Refused: Error {}
    func submit(_ event: Event) async throws { throw Refused() }
    func submitAndWait(_ event: Event) async throws -> EventReport { throw Refused() }
    var room: Int { 0 }
}

func routes() throws -> RouteTable {
    if let table { return table }
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    let store = try SQLiteStore(path: directory + "/state.sqlite")
    var made = RouteTable()
    for configuration in routeConfigurations {
        let action = StageRegistry(BuiltinStages.all).routeAction(named: configuration["action"]?.stringValue ?? "")!
        made.add(try action.route(configuration), context: RouteContext(pipeline: "fuzz", store: store, sink: NoEvents()))
    }
    table = made
    return made
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRoutes(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let lines = Data(bytes: start, count: count).split(separator: UInt8(ascii: "\n"), maxSplits: 4, omittingEmptySubsequences: false)
    guard lines.count == 5, let index = Int(String(decoding: lines[0], as: UTF8.self)), routeConfigurations.indices.contains(index) else { return 0 }
    let table = try! routes()
    let route = table.entries.first { $0.route.path == routeConfigurations[index]["path"]?.stringValue }!
    let path = String(decoding: lines[1], as: UTF8.self)
    // The host finds the route by the path first; a path that matches no route is its 404.
    guard case .found(let entry, let parameters) = table.lookup(method: route.route.method, path: path) else { return 0 }
    var query: [String: String] = [:]
    for pair in String(decoding: lines[2], as: UTF8.self).split(separator: "&") {
        let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
        query[String(parts[0])] = parts.count > 1 ? String(parts[1]).removingPercentEncoding ?? String(parts[1]) : ""
    }
    let user = lines[3].isEmpty ? nil : String(decoding: lines[3], as: UTF8.self)
    // The host refuses bodies that are not a JSON object before any route sees them.
    var body: JSON?
    if !lines[4].isEmpty {
        guard let parsed = try? JSON.parse(Data(lines[4])), parsed.objectValue != nil else { return 0 }
        body = parsed
    }
    let request = RouteRequest(
        method: entry.route.method,
        path: path,
        parameters: parameters,
        query: query,
        body: body,
        authenticatedUser: user,
        principal: user ?? ""
    )
    let done = DispatchSemaphore(value: 0)
    nonisolated(unsafe) var outcome: Result<RouteResponse, any Error>?
    Task {
        do { outcome = .success(try await entry.route.handler(request, entry.context)) } catch { outcome = .failure(error) }
        done.signal()
    }
    done.wait()
    switch outcome! {
    case .success(let response):
        guard response.status < 500 else { fatalError("\(path) answered \(response.status): \(response.body.compactText)") }
    case .failure(let error as RouteError):
        guard (400..<500).contains(error.status) else { fatalError("\(path) refused with \(error.status): \(error)") }
    case .failure(let error):
        fatalError("\(path) threw \(type(of: error)), not a RouteError: \(error)")
    }
    return 0
}

/// SwiftPM's entry point for this executable: libFuzzer's driver, running the target above.
@_cdecl("fuzz_routes_main")
public func fuzzRoutesMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    runFuzzer(argc, argv) { start, size in fuzzRoutes(start, size) }
}
