/// The `auth:` key of a route or of a source that serves one.
public enum RouteAuthConfiguration {
    public static let valueType: ValueType = .tagged(Tagged(
        discriminator: "type", noun: "auth type",
        variants: [
            "none": Schema(),
            "token": Schema([.required("token", .string, "Shared secret the caller sends as `Authorization: Bearer <token>`.")]),
            "jwt": Schema([
                .required("secret", .string, "HS256 secret the user JWTs are signed with."),
                SchemaKey("user_claim", .string, default: "sub", "Claim that names the user."),
            ]),
        ],
        defaultVariant: "none"))

    /// For routes that backends call (event routes): no user JWTs, so validation itself says
    /// `unknown auth type 'jwt'` where a user route would be meant.
    public static let backendValueType: ValueType = {
        guard case .tagged(var tagged) = valueType else { return valueType }
        tagged.variants["jwt"] = nil
        return .tagged(tagged)
    }()

    public static func make(_ json: JSON?) -> RouteAuthentication {
        guard json?["type"]?.stringValue == "jwt" else { return backend(json) }
        return .jwt(secret: json?["secret"]?.stringValue ?? "", userClaim: json?["user_claim"]?.stringValue ?? "sub")
    }

    /// `none` or `token`: what `backendValueType` allows.
    public static func backend(_ json: JSON?) -> RouteAuthentication {
        json?["type"]?.stringValue == "token" ? .token(json?["token"]?.stringValue ?? "") : .none
    }

    public static func authenticatesUsers(_ json: JSON?) -> Bool { json?["type"]?.stringValue == "jwt" }
}
