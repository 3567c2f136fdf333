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

    public static func make(_ json: JSON?) async -> RouteAuthentication {
        switch json?["type"]?.stringValue {
        case "token": return .token(json?["token"]?.stringValue ?? "")
        case "jwt": return await .jwt(secret: json?["secret"]?.stringValue ?? "", userClaim: json?["user_claim"]?.stringValue ?? "sub")
        default: return .none
        }
    }

    public static func authenticatesUsers(_ json: JSON?) -> Bool { json?["type"]?.stringValue == "jwt" }
}
