import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import PushPipeCore

/// A small JSON client for tests, always against 127.0.0.1.
public struct HTTPTestClient: Sendable {
    public let port: Int
    public init(port: Int) { self.port = port }

    public struct Response: Sendable {
        public var status: Int
        public var body: JSON?
        public var text: String
        /// Header names lower-cased; a repeated header's values joined by ", ".
        public var headers: [String: String] = [:]
    }

    public func request(_ method: String, _ path: String, json: JSON? = nil, rawBody: String? = nil,
                        headers: [String: String] = [:], timeout: Int64 = 30) async throws -> Response {
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
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(timeout))
        let buffer = try await response.body.collect(upTo: 1 << 22)
        let text = String(buffer: buffer)
        var headers: [String: String] = [:]
        for (name, value) in response.headers { headers[name.lowercased()] = headers[name.lowercased()].map { $0 + ", " + value } ?? value }
        return Response(status: Int(response.status.code), body: try? JSON.parse(text), text: text, headers: headers)
    }
}
