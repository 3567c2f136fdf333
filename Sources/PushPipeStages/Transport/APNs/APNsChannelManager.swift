import Foundation
import NIOCore
import NIOHPACK
import PushPipeCore

/// APNs' channel-management API for iOS 18 broadcast Live Activities: create, read, list and
/// delete channels, with the same `.p8` provider token as sends, over its own HTTP/2 host
/// (`api-manage-broadcast.push.apple.com:2196`, sandbox `…sandbox…:2195`).
public final class APNsChannelManager: Sendable {
    public struct Failure: Error, CustomStringConvertible {
        public var status: Int
        public var reason: String
        public var description: String { "APNs answered \(status) \(reason)" }
    }

    let bundleID: String
    let authority: String
    let pool: HTTP2ConnectionPool
    let token: APNsProviderToken

    /// - Parameter baseURL: empty for Apple's host (`sandbox` picks which); a stand-in's otherwise.
    public init(
        keyPath: String,
        keyID: String,
        teamID: String,
        bundleID: String,
        sandbox: Bool,
        baseURL: String = "",
        caFile: String = ""
    ) async throws {
        let base =
            baseURL.isEmpty
            ? (sandbox ? "https://api-manage-broadcast.sandbox.push.apple.com:2195" : "https://api-manage-broadcast.push.apple.com:2196") : baseURL
        guard let url = URL(string: base), url.scheme == "https", let host = url.host else {
            throw ConfigurationValueError(keyPath: "base_url", "'\(base)' is not an https URL", expected: "https://host[:port]")
        }
        guard let data = FileManager.default.contents(atPath: keyPath), let pem = String(data: data, encoding: .utf8) else {
            throw ConfigurationValueError(keyPath: "key_path", "cannot read the .p8 key", expected: "a readable .p8 file")
        }
        token = try await APNsProviderToken(pem: pem, keyID: keyID, teamID: teamID)
        self.bundleID = bundleID
        authority = url.port.map { "\(host):\($0)" } ?? host
        pool = HTTP2ConnectionPool(
            host: host,
            port: url.port ?? 443,
            keptConnections: 1,
            maximumConnections: 1,
            idleTimeout: .seconds(60),
            readyTimeout: .seconds(10),
            maximumOpenStreams: 10,
            lastUsableStreamID: HTTP2StreamHandler.defaultLastUsableStreamID,
            tls: try HTTP2ConnectionPool.tlsContext(caFile: caFile),
            reading: APNsResponse.reading
        )
    }

    /// A new channel's id. `storesLatest`: APNs keeps the most recent message (up to 8 hours) for
    /// devices that were offline (message storage policy 1); fixed for the channel's life.
    public func create(storesLatest: Bool = false) async throws -> String {
        let body: JSON = ["message-storage-policy": .int(storesLatest ? 1 : 0), "push-type": "LiveActivity"]
        let response = try await request("POST", "/1/apps/\(bundleID)/channels", body: Data(body.compactText.utf8), expecting: 201)
        guard let id = response.channelID, !id.isEmpty else { throw Failure(status: response.status, reason: "no apns-channel-id in the answer") }
        return id
    }

    /// The channel's configuration: `message-storage-policy` and `push-type`.
    public func read(_ channel: String) async throws -> JSON {
        let response = try await request("GET", "/1/apps/\(bundleID)/channels", channel: channel, expecting: 200)
        return (try? JSON.parse(response.body)) ?? [:]
    }

    public func list() async throws -> [String] {
        let response = try await request("GET", "/1/apps/\(bundleID)/all-channels", expecting: 200)
        return (try? JSON.parse(response.body))?["channels"]?.arrayValue?.compactMap(\.stringValue) ?? []
    }

    /// Irreversible: activities listening to it get nothing more.
    public func delete(_ channel: String) async throws {
        _ = try await request("DELETE", "/1/apps/\(bundleID)/channels", channel: channel, expecting: 204)
    }

    public func shutdown() async { await pool.shutdown() }

    func request(_ method: String, _ path: String, channel: String? = nil, body: Data = Data(), expecting status: Int) async throws -> APNsResponse {
        var headers = HPACKHeaders()
        headers.add(name: ":method", value: method)
        headers.add(name: ":scheme", value: "https")
        headers.add(name: ":authority", value: authority)
        headers.add(name: ":path", value: path)
        headers.add(name: "authorization", value: "bearer \(try await token.token())")
        headers.add(name: "apns-request-id", value: RandomIdentifier.uuid())
        if let channel { headers.add(name: "apns-channel-id", value: channel) }
        if !body.isEmpty { headers.add(name: "content-type", value: "application/json") }
        let connection = try await pool.connection()
        let response = APNsResponse(try await connection.send(headers: headers, body: ByteBuffer(data: body), timeout: .seconds(10)))
        guard response.status == status else {
            let reason = (try? JSON.parse(response.body))?["reason"]?.stringValue ?? "HTTP \(response.status)"
            throw Failure(status: response.status, reason: reason)
        }
        return response
    }
}
