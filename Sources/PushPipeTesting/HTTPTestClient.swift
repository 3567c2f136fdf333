import AsyncHTTPClient
import Foundation
import NIOCore
import NIOFoundationCompat
import NIOHTTP1
import PushPipeCore

/// A small JSON client for tests, always against 127.0.0.1.
public struct HTTPTestClient: Sendable {
    public let port: Int
    let client: HTTPClient

    /// - Parameter client: `.shared` opens at most 8 connections to a host, so more requests at
    ///   once wait in the client, never reaching the server; `manyConnections` does not.
    public init(port: Int, client: HTTPClient) {
        self.port = port
        self.client = client
    }

    public init(port: Int) { self.init(port: port, client: .shared) }

    /// A client that opens up to 1,024 connections to one host, for bursts a server must meet at once.
    public static let manyConnections: HTTPClient = {
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = 1024
        return HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }()

    public struct Response: Sendable {
        public var status: Int
        public var body: JSON?
        public var text: String
        /// Header names lower-cased; a repeated header's values joined by ", ".
        public var headers: [String: String] = [:]
    }

    /// Sent again while a daemon answers that it is starting: its listener comes up before its
    /// routes (`HTTPHost`), and such a request ran no route. A test that takes the port from the
    /// daemon's first line and asks at once would otherwise get 503 on a busy machine.
    public func request(
        _ method: String,
        _ path: String,
        json: JSON? = nil,
        rawBody: String? = nil,
        headers: [String: String] = [:],
        timeout: Int64 = 30
    ) async throws -> Response {
        let deadline = ContinuousClock.now + .seconds(timeout)
        while true {
            let response = try await requestOnce(method, path, json: json, rawBody: rawBody, headers: headers, timeout: timeout)
            guard response.status == 503, response.body?["error"]?.stringValue?.hasPrefix("starting:") == true, ContinuousClock.now < deadline
            else { return response }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    private func requestOnce(
        _ method: String,
        _ path: String,
        json: JSON?,
        rawBody: String?,
        headers: [String: String],
        timeout: Int64
    ) async throws -> Response {
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)\(path)")
        request.method = HTTPMethod(rawValue: method)
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let json {
            if !headers.keys.contains(where: { $0.lowercased() == "content-type" }) {
                request.headers.add(name: "content-type", value: "application/json")
            }
            request.body = .bytes(ByteBuffer(data: json.serialized()))
        } else if let rawBody {
            request.body = .bytes(ByteBuffer(string: rawBody))
        }
        let response = try await client.execute(request, timeout: .seconds(timeout))
        let buffer = try await response.body.collect(upTo: 1 << 22)
        let text = String(buffer: buffer)
        var headers: [String: String] = [:]
        for (name, value) in response.headers { headers[name.lowercased()] = headers[name.lowercased()].map { $0 + ", " + value } ?? value }
        return Response(status: Int(response.status.code), body: try? JSON.parse(text), text: text, headers: headers)
    }
}
