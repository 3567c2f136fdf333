import Foundation
import PushPipeCore

/// Routes through which an app's backend makes and removes iOS 18 broadcast channels, one per
/// shared Live Activity (a group's pages, a match). A channel's id is stored as the group's
/// token of a broadcast kind; the pipeline's renderer sends to it like to any token, and the
/// `apns` transport turns that into one broadcast request for every subscriber.
///
/// - `POST <path>` `{group}`: the group's channel, created on APNs unless it has one.
/// - `GET <path>/:group`: the group's channel id, for the app's `pushType: .channel(id)`.
/// - `DELETE <path>/:group`: the group's channels, deleted on APNs and in the store.
final class APNsChannelsSource: Source, LongRunningStage, Sendable {
    static let summary = "Routes that create, read and delete APNs broadcast channels (iOS 18) and keep their ids as a group's tokens."

    struct Configuration: StageConfiguration {
        var path: String
        var auth: JSON
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

        static let schema = Schema([
            .required("path", .string, "`POST <path>` creates a channel for the body's group; `GET` and `DELETE <path>/:group` read and delete it."),
            SchemaKey("auth", RouteAuthConfiguration.backendValueType, default: ["type": "none"], "`{type: token, token}` for the backend's shared secret."),
            SchemaKey("group_field", .string, default: "group", "Body field naming the group."),
            SchemaKey("user_prefix", .string, default: "",
                      "Put before the group where the channel is stored as a token's owner (`group:`), as the event route that pages the group does."),
            SchemaKey("token_kind", .string, default: "broadcast-channel", "Kind the channel id is stored as (the `apns` transport's `broadcast_token_kinds`)."),
            SchemaKey("store_latest", .boolean, default: false, "APNs keeps the latest message (up to 8 hours) for devices that were offline."),
        ] + APNsTransport.Configuration.credentialKeys + [
            SchemaKey("sandbox", .boolean, default: false, "Apple's sandbox channel-management host."),
            SchemaKey("base_url", .string, default: "", "Overrides the channel-management host (a stand-in)."),
            SchemaKey("ca_file", .string, default: "", "PEM file of extra CAs to trust; verification stays on."),
        ])

        /// Where the group's channels are stored: the token owner.
        func owner(of group: String) -> String { userPrefix + group }
    }

    let configuration: Configuration
    let routes: [RouteDefinition]
    private let holder: ChannelManagerHolder

    init(configuration: Configuration, context: StageBuildContext) throws {
        guard configuration.path.hasPrefix("/"), !configuration.path.hasSuffix("/") else {
            throw ConfigurationValueError(keyPath: "path", "'\(configuration.path)' is not a route path", expected: "a path starting with '/', e.g. /api/channels")
        }
        self.configuration = configuration
        let authentication = RouteAuthConfiguration.backend(configuration.auth)
        let holder = ChannelManagerHolder(configuration)
        self.holder = holder
        let group = configuration.path + "/:group"
        routes = [
            RouteDefinition(method: "POST", path: configuration.path, authentication: authentication, contract: Self.createContract(configuration)) {
                try await Self.create($0, $1, configuration, holder)
            },
            RouteDefinition(method: "GET", path: group, authentication: authentication, contract: Self.readContract) {
                try await Self.read($0, $1, configuration)
            },
            RouteDefinition(method: "DELETE", path: group, authentication: authentication, contract: Self.deleteContract) {
                try await Self.delete($0, $1, configuration, holder)
            },
        ]
    }

    func run(into sink: any EventSink, context: StageContext) async throws {
        await untilCancelled()
    }

    func run(context: StageContext) async throws {
        await untilCancelled()
        await holder.shutdown()
    }
}
