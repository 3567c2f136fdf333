import Foundation

/// A route's `auth: {type: identity}`: the caller's bearer credential is shown to an identity
/// URL the operator names (OGS: `/api/v1/me`), and its JSON answer says whose it is. A user
/// route then acts only for that user, so an anonymous caller cannot register a device for
/// someone else's id. Configuration only: the app host asks (`IdentityLookup`) and caches.
public struct IdentityCheck: Sendable, Equatable {
    /// Asked `GET` with the caller's `Authorization` header.
    public var url: String
    /// Where the answer names the user: a dotted path (`id`, `user.id`).
    public var idField: String
    /// How long the URL may take to answer; past it the request gets 503.
    public var timeout: Duration
    /// How long a positive answer is reused for the same credential.
    public var cacheLifetime: Duration
    /// PEM file of extra CAs to trust for `url` (a mirror or a stand-in).
    public var caFile: String

    public init(url: String, idField: String = "id", timeout: Duration = .seconds(5), cacheLifetime: Duration = .seconds(60), caFile: String = "") {
        self.url = url
        self.idField = idField
        self.timeout = timeout
        self.cacheLifetime = cacheLifetime
        self.caFile = caFile
    }

    public static let schema = Schema([
        .required(
            "url",
            .string,
            "URL asked (`GET`, no redirects followed) with the caller's `Authorization` header; a 2xx JSON answer names the user, e.g. "
                + "`${OGS_API_BASE:-https://online-go.com}/api/v1/me`."
        ),
        SchemaKey(
            "id_field",
            .string,
            default: "id",
            "Field of the answer holding the user's id (a string or an integer; a dotted path such as `user.id`)."
        ),
        SchemaKey("timeout", .duration, default: 5, "How long the URL may take to answer; past it the request gets 503."),
        SchemaKey(
            "cache",
            .duration,
            default: 60,
            "How long a positive answer is reused for the same credential (at most 10,000 credentials are kept); 0: ask every time."
        ),
        SchemaKey("ca_file", .string, default: "", "PEM file of extra CAs to trust for `url`; verification stays on."),
    ])

    /// From a validated `auth` object.
    init(_ json: JSON?) {
        func seconds(_ key: String, _ fallback: Double) -> Duration {
            .seconds(max(0, json?[key]?.doubleValue ?? fallback))
        }
        self.init(
            url: json?["url"]?.stringValue ?? "",
            idField: json?["id_field"]?.stringValue ?? "id",
            timeout: seconds("timeout", 5),
            cacheLifetime: seconds("cache", 60),
            caFile: json?["ca_file"]?.stringValue ?? ""
        )
    }

    /// Why `url` cannot be asked, or nil: an https URL with a host, no credentials in it. Plain
    /// http only to loopback (a stand-in, a sidecar): it would carry callers' bearer tokens in
    /// the clear.
    public static func problem(url: String) -> String? {
        guard let components = URLComponents(string: url), let host = components.host, !host.isEmpty,
            let scheme = components.scheme?.lowercased(), ["http", "https"].contains(scheme)
        else { return "'\(url)' is not an http(s) URL" }
        guard components.user == nil, components.password == nil else { return "the URL carries credentials" }
        if scheme == "http", !["localhost", "127.0.0.1", "[::1]", "::1"].contains(host.lowercased()) {
            return "'\(url)' is plain http to another host: callers' bearer tokens would travel in the clear; use https"
        }
        return nil
    }
}
