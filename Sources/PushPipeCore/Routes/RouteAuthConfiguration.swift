/// The `auth:` key of a route or of a source that serves one.
public enum RouteAuthConfiguration {
    public static let valueType: ValueType = .tagged(
        Tagged(
            discriminator: "type",
            noun: "auth type",
            variants: [
                "none": Schema(),
                "token": Schema([.required("token", .string, "Shared secret the caller sends as `Authorization: Bearer <token>`.")]),
                "jwt": Schema([
                    .required("secret", .string, "HS256 secret the user JWTs are signed with."),
                    SchemaKey("user_claim", .string, default: "sub", "Claim that names the user."),
                ]),
                "identity": IdentityCheck.schema,
            ],
            defaultVariant: "none"
        )
    )

    /// For routes that backends call (event routes): no user credentials, so validation itself
    /// says `unknown auth type 'jwt'` where a user route would be meant.
    public static let backendValueType: ValueType = {
        guard case .tagged(var tagged) = valueType else { return valueType }
        tagged.variants["jwt"] = nil
        tagged.variants["identity"] = nil
        return .tagged(tagged)
    }()

    /// Throws for an identity URL that cannot be asked (empty only while a dry run leaves a
    /// variable undefined: its requests get 503).
    public static func make(_ json: JSON?) throws(ConfigurationValueError) -> RouteAuthentication {
        switch json?["type"]?.stringValue {
        case "jwt":
            return .jwt(secret: json?["secret"]?.stringValue ?? "", userClaim: json?["user_claim"]?.stringValue ?? "sub")
        case "identity":
            let check = IdentityCheck(json)
            if !check.url.isEmpty, let problem = IdentityCheck.problem(url: check.url) {
                throw ConfigurationValueError(keyPath: "auth.url", problem, expected: "https://online-go.com/api/v1/me")
            }
            return .identity(check)
        default:
            return backend(json)
        }
    }

    /// `none` or `token`: what `backendValueType` allows.
    public static func backend(_ json: JSON?) -> RouteAuthentication {
        json?["type"]?.stringValue == "token" ? .token(json?["token"]?.stringValue ?? "") : .none
    }

    public static func authenticatesUsers(_ json: JSON?) -> Bool { ["jwt", "identity"].contains(json?["type"]?.stringValue) }

    /// Whether a user route may act only for the user the credential names (`identity`).
    static func requiresOwner(_ json: JSON?) -> Bool { json?["type"]?.stringValue == "identity" }
}
