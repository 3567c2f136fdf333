import Foundation
import PushPipeCore
import Synchronization

/// Routes through which an app's backend makes and removes iOS 18 broadcast channels, one per
/// shared Live Activity (a group's page, a match): `POST <path>` creates a channel on APNs and
/// stores its id as the group's `broadcast-channel` token; `DELETE <path>/:group` deletes the
/// group's channels on APNs and in the store. It produces no events: the pipeline's renderer
/// sends to the channel like to any token of that kind.
final class APNsChannelsSource: Source, LongRunningStage, Sendable {
    static let summary = "Routes that create and delete APNs broadcast channels (iOS 18) and keep their ids as a group's tokens."

    struct Configuration: StageConfiguration {
        var path: String
        var auth: JSON
        var groupField: String
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
            .required("path", .string, "`POST <path>` creates a channel for the body's group; `DELETE <path>/:group` deletes the group's channels."),
            SchemaKey("auth", RouteAuthConfiguration.backendValueType, default: ["type": "none"], "`{type: token, token}` for the backend's shared secret."),
            SchemaKey("group_field", .string, default: "group", "Body field naming the group (the channel is stored as its token)."),
            SchemaKey("token_kind", .string, default: "broadcast-channel", "Kind the channel id is stored as (the `apns` transport's `broadcast_token_kinds`)."),
            SchemaKey("store_latest", .boolean, default: false, "APNs keeps the latest message (up to 8 hours) for devices that were offline."),
        ] + APNsTransport.Configuration.credentialKeys + [
            SchemaKey("sandbox", .boolean, default: false, "Apple's sandbox channel-management host."),
            SchemaKey("base_url", .string, default: "", "Overrides the channel-management host (a stand-in)."),
            SchemaKey("ca_file", .string, default: "", "PEM file of extra CAs to trust; verification stays on."),
        ])
    }

    let configuration: Configuration
    let routes: [RouteDefinition]
    private let holder: ManagerHolder

    init(configuration: Configuration, context: StageBuildContext) throws {
        guard configuration.path.hasPrefix("/"), !configuration.path.hasSuffix("/") else {
            throw ConfigurationValueError(keyPath: "path", "'\(configuration.path)' is not a route path", expected: "a path starting with '/', e.g. /api/channels")
        }
        self.configuration = configuration
        let authentication = RouteAuthConfiguration.backend(configuration.auth)
        let holder = ManagerHolder()
        self.holder = holder
        routes = [
            RouteDefinition(method: "POST", path: configuration.path, authentication: authentication) { request, context in
                try await Self.create(request, context, configuration, holder.manager(configuration))
            },
            RouteDefinition(method: "DELETE", path: configuration.path + "/:group", authentication: authentication) { request, context in
                try await Self.delete(request, context, configuration, holder.manager(configuration))
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

    static func create(_ request: RouteRequest, _ context: RouteContext, _ configuration: Configuration,
                       _ manager: APNsChannelManager) async throws -> RouteResponse {
        guard let group = request.body?[configuration.groupField]?.textValue, !group.isEmpty, group.count <= 256 else {
            throw RouteError.badRequest("missing or invalid field '\(configuration.groupField)'", field: configuration.groupField)
        }
        let channel: String
        do {
            channel = try await manager.create(storesLatest: configuration.storeLatest)
        } catch let failure as APNsChannelManager.Failure {
            throw RouteError(502, "APNs refused to create a channel: \(failure.reason)", field: nil)
        }
        try await context.registrations.register(DeviceToken(user: group, kind: configuration.tokenKind, value: channel),
                                                 pipeline: context.pipeline, environment: nil, replace: false)
        return RouteResponse(status: 201, ["status": "created", "group": .string(group), "channel_id": .string(channel)])
    }

    static func delete(_ request: RouteRequest, _ context: RouteContext, _ configuration: Configuration,
                       _ manager: APNsChannelManager) async throws -> RouteResponse {
        guard let group = request.parameters["group"], !group.isEmpty else { throw RouteError.badRequest("missing group", field: "group") }
        let channels = try await context.registrations.tokens(pipeline: context.pipeline, user: group, kind: configuration.tokenKind)
        for channel in channels {
            do {
                try await manager.delete(channel.value)
            } catch let failure as APNsChannelManager.Failure where failure.reason == "ChannelNotRegistered" {
                // Already gone on APNs: removing it here is all that is left to do.
            } catch let failure as APNsChannelManager.Failure {
                throw RouteError(502, "APNs refused to delete a channel: \(failure.reason)", field: nil)
            }
            _ = try await context.registrations.removeToken(pipeline: context.pipeline, kind: configuration.tokenKind, token: channel.value,
                                                            unlessUpdatedAfter: nil)
        }
        return RouteResponse(["status": "deleted", "group": .string(group), "channels": .int(Int64(channels.count))])
    }
}

/// The channel manager, made on first use (it reads the key) and shared by both routes.
final class ManagerHolder: Sendable {
    private let task = Mutex<Task<APNsChannelManager, any Error>?>(nil)

    func manager(_ configuration: APNsChannelsSource.Configuration) async throws -> APNsChannelManager {
        let current = task.withLock { current -> Task<APNsChannelManager, any Error> in
            if let current { return current }
            let made = Task {
                try await APNsChannelManager(keyPath: configuration.keyPath, keyID: configuration.keyId, teamID: configuration.teamId,
                                             bundleID: configuration.bundleId, sandbox: configuration.sandbox,
                                             baseURL: configuration.baseUrl, caFile: configuration.caFile)
            }
            current = made
            return made
        }
        do {
            return try await current.value
        } catch {
            // A key that could not be read is read again next time.
            task.withLock { if $0 == current { $0 = nil } }
            throw RouteError(503, "APNs credentials: \(error)", field: nil)
        }
    }

    func shutdown() async {
        if let manager = try? await task.withLock({ $0 })?.value { await manager.shutdown() }
    }
}
