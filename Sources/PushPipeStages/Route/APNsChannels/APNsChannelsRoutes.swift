import Foundation
import PushPipeCore

/// The `apns.channels` route kind: routes through which an app's backend makes and removes
/// iOS 18 broadcast channels, one per shared Live Activity (a group's pages, a match). A
/// channel's id is stored as the group's token of a broadcast kind; the pipeline's renderer
/// sends to it like to any token, and the `apns` transport turns that into one broadcast
/// request for every subscriber. Under the entry's `path`:
/// - `POST <path>` `{group}`: the group's channel, created on APNs unless it has one.
/// - `GET <path>/:group`: the group's channel id, for the app's `pushType: .channel(id)`.
/// - `DELETE <path>/:group`: the group's channels, deleted on APNs and in the store.
enum APNsChannelsRoutes {
    static let action = RouteAction(
        name: "apns.channels",
        summary: "Routes that create, read and delete APNs broadcast channels (iOS 18) and keep their ids as a group's tokens.",
        schema: Configuration.schema
    ) { json, _ in
        let configuration = try Configuration.schema.decode(Configuration.self, from: json)
        guard let path = json["path"]?.stringValue, !path.hasSuffix("/") else {
            throw ConfigurationValueError(
                keyPath: "path",
                "'\(json["path"]?.stringValue ?? "")' is not a route path",
                expected: "a path not ending in '/', e.g. /api/channels"
            )
        }
        // Backends call these routes: a user's credential would let any user make channels.
        if RouteAuthConfiguration.authenticatesUsers(json["auth"]) {
            throw ConfigurationValueError(keyPath: "auth.type", "apns.channels routes are called by a backend", expected: "none or token")
        }
        let authentication = RouteAuthConfiguration.backend(json["auth"])
        // A backend makes a group's channel as its groups come: no app's rate limits.
        let limits = try RouteLimits.parse(json["limits"], defaults: RouteLimits.backendDefaults)
        let holder = ChannelManagerHolder(configuration)
        let group = path + "/:group"
        return ServedRoutes(
            routes: [
                RouteDefinition(method: "POST", path: path, authentication: authentication, limits: limits, contract: createContract(configuration)) {
                    try await create($0, $1, configuration, holder)
                },
                RouteDefinition(method: "GET", path: group, authentication: authentication, limits: limits, contract: readContract) {
                    try await read($0, $1, configuration)
                },
                RouteDefinition(method: "DELETE", path: group, authentication: authentication, limits: limits, contract: deleteContract) {
                    try await delete($0, $1, configuration, holder)
                },
            ],
            service: holder
        )
    }

    struct Configuration: StageConfiguration {
        var groupField: String
        var userPrefix: String
        var tokenKind: String
        var storeLatest: Bool
        var teamId: String
        var keyId: String
        var keyPath: String
        var bundleId: String
        var sandbox: Bool
        var baseUrl: String
        var caFile: String

        static let schema = Schema(
            [
                SchemaKey("group_field", .string, default: "group", "Body field naming the group."),
                SchemaKey(
                    "user_prefix",
                    .string,
                    default: "",
                    "Put before the group where the channel is stored as a token's owner (`group:`), as the event route that pages the group does."
                ),
                SchemaKey(
                    "token_kind",
                    .string,
                    default: "broadcast-channel",
                    "Kind the channel id is stored as (the `apns` transport's `broadcast_token_kinds`)."
                ),
                SchemaKey("store_latest", .boolean, default: false, "APNs keeps the latest message (up to 8 hours) for devices that were offline."),
            ] + APNsTransport.Configuration.credentialKeys + [
                SchemaKey("sandbox", .boolean, default: false, "Apple's sandbox channel-management host."),
                SchemaKey("base_url", .string, default: "", "Overrides the channel-management host (a stand-in)."),
                SchemaKey("ca_file", .string, default: "", "PEM file of extra CAs to trust; verification stays on."),
            ]
        )

        /// Where the group's channels are stored: the token owner.
        func owner(of group: String) -> String { userPrefix + group }
    }
}
