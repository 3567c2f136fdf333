import Foundation

/// A route's `limits:`: how often a client or a caller may call it, and how large a body may
/// be. The host enforces them (429 with `Retry-After`, 413); the runtime knows nothing of them.
public struct RouteLimits: Sendable, Equatable {
    /// A token bucket: `perSecond` on average, `burst` at once.
    public struct Rate: Sendable, Equatable {
        public var perSecond: Double
        public var burst: Int

        public init(perSecond: Double, burst: Int) {
            self.perSecond = perSecond
            self.burst = burst
        }
    }

    /// Per client address (the peer, or `X-Forwarded-For` from a trusted proxy).
    public var perClient: Rate?
    /// Per authenticated caller: a JWT's user, or a backend's token.
    public var perPrincipal: Rate?
    public var maxBodyBytes: Int

    public init(perClient: Rate? = nil, perPrincipal: Rate? = nil, maxBodyBytes: Int = 64 * 1024) {
        self.perClient = perClient
        self.perPrincipal = perPrincipal
        self.maxBodyBytes = maxBodyBytes
    }

    /// Routes apps call (register, settings, history): a phone calls them now and then, so a
    /// client far past that is a script. Per address generous enough for many phones behind
    /// one carrier NAT.
    public static let appDefaults: JSON = ["per_client": "50/s", "per_principal": "5/s", "burst": 20, "max_body": 16384]
    /// `appDefaults` as limits, for routes a stage serves to apps without a `limits` key of its own.
    public static let app = (try? parse(nil, defaults: appDefaults)) ?? RouteLimits()
    /// Routes backends call (events): throughput is the point; the body is the event.
    public static let backendDefaults: JSON = ["per_client": "off", "per_principal": "off", "burst": 20, "max_body": 65536]

    /// The `limits` key, described once for every route and source that serves one.
    public static func schemaKey(defaults: JSON) -> SchemaKey {
        SchemaKey(
            "limits",
            .object(
                Schema([
                    SchemaKey(
                        "per_client",
                        .string,
                        default: defaults["per_client"],
                        "Requests per client address, as a token bucket: `N/s`, `N/min`, `N/h`, or `off`. Past it: 429 with `Retry-After`. Behind "
                            + "a proxy, the address is `X-Forwarded-For`'s, from proxies named by `--trusted-proxy` only."
                    ),
                    SchemaKey(
                        "per_principal",
                        .string,
                        default: defaults["per_principal"],
                        "Requests per authenticated caller (a JWT's user, a backend's token): `N/s`, `N/min`, `N/h`, or `off`."
                    ),
                    SchemaKey(
                        "burst",
                        .integer,
                        default: defaults["burst"],
                        in: 1...Double.infinity,
                        "Requests a bucket allows at once, above the rate."
                    ),
                    SchemaKey(
                        "max_body",
                        .integer,
                        default: defaults["max_body"],
                        in: 1...16_777_216,
                        "Largest request body, in bytes; larger gets 413."
                    ),
                ])
            ),
            default: defaults,
            "Request limits of the route."
        )
    }

    /// Reads a validated `limits` object (as written, or camel-cased in a decoded stage
    /// configuration); a rate that does not parse names its key.
    public static func parse(_ json: JSON?, defaults: JSON) throws -> RouteLimits {
        func value(_ key: String) -> JSON? { json?[key] ?? json?[Schema.camelCase(key)] ?? defaults[key] }
        // The schema's ranges held these when the file was read.
        let burst = max(1, Int(value("burst")?.intValue ?? 20))
        let maxBody = Int(value("max_body")?.intValue ?? 65536)
        return RouteLimits(
            perClient: try rate(value("per_client"), burst: burst, key: "per_client"),
            perPrincipal: try rate(value("per_principal"), burst: burst, key: "per_principal"),
            maxBodyBytes: maxBody
        )
    }

    static func rate(_ json: JSON?, burst: Int, key: String) throws -> Rate? {
        guard let text = json?.stringValue, text != "off" else { return nil }
        let parts = text.split(separator: "/")
        let seconds: Double? =
            switch parts.count == 2 ? parts[1] : "" {
            case "s": 1
            case "min": 60
            case "h": 3600
            default: nil
            }
        // At least one a year: a rarer one's wait between two sends is more than a `Duration` holds.
        guard let seconds, let count = Double(parts[0]), count > 0, seconds / count <= SchemaValidator.maximumDuration else {
            throw ConfigurationValueError(
                keyPath: "limits.\(key)",
                "'\(text)' is not a rate",
                expected: "N/s, N/min, N/h (at least one a year) or off, e.g. 20/s"
            )
        }
        return Rate(perSecond: count / seconds, burst: burst)
    }
}
