import PushPipeCore

extension APNsChannelsRoutes {
    static func createContract(_ configuration: Configuration) -> RouteContract {
        RouteContract(
            summary: "The group's broadcast channel: created on APNs (201) unless the group has one (200).",
            body: RouteContract.object([configuration.groupField: RouteContract.string], required: [configuration.groupField]),
            responses: [200: channelAnswer, 201: channelAnswer],
            errors: [
                409: "A dry run, for a group without a channel: none is created on APNs.",
                502: "APNs refused to create the channel (`error` gives its reason) or could not be asked. Nothing was stored.",
            ]
        )
    }

    static let channelAnswer = RouteContract.object(
        ["group": RouteContract.string, "channel_id": RouteContract.string],
        required: ["group", "channel_id"]
    )
    static let readContract = RouteContract(
        summary: "The group's broadcast channel id, for the app's `pushType: .channel(id)`.",
        responses: [200: channelAnswer]
    )
    static let deleteContract = RouteContract(
        summary: "Deletes the group's broadcast channels on APNs and in the store.",
        responses: [
            200: RouteContract.object(
                ["group": RouteContract.string, "channels": ["type": "integer"]],
                required: ["group", "channels"]
            )
        ],
        errors: [
            409: "A dry run, for a group with a channel: none is deleted on APNs.",
            502:
                "APNs refused to delete a channel (`error` gives its reason) or could not be asked. The channels deleted before it are gone from the store too.",
        ]
    )

    static func create(
        _ request: RouteRequest,
        _ context: RouteContext,
        _ configuration: Configuration,
        _ holder: ChannelManagerHolder
    ) async throws -> RouteResponse {
        guard let group = request.body?[configuration.groupField]?.textValue, !group.isEmpty, group.count <= 128 else {
            throw RouteError.badRequest("missing or invalid field '\(configuration.groupField)'", field: configuration.groupField)
        }
        let owner = configuration.owner(of: group)
        // One channel per group: a backend that asks again (a retry, a restart, two at once)
        // gets the same one, and APNs' 10,000 channels per app are not spent on duplicates.
        let (channel, created) = try await holder.once(owner) {
            if let existing = try await context.registrations.tokens(user: owner, kind: configuration.tokenKind).first {
                return (existing.value, false)
            }
            guard context.mode == .live else { throw RouteError(409, "a dry run creates no channel on APNs", field: nil) }
            let channel: String
            do {
                channel = try await holder.manager().create(storesLatest: configuration.storeLatest)
            } catch let failure as APNsChannelManager.Failure {
                throw RouteError(502, "APNs refused to create a channel: \(failure.reason)", field: nil)
            } catch let error as RouteError {
                throw error
            } catch {
                // Unreachable, too slow, or no provider token: the provider's side, said without
                // the details (an address, a key file) a backend has no use for.
                throw RouteError(502, "APNs could not be asked to create a channel", field: nil)
            }
            try await context.registrations.register(
                DeviceToken(user: owner, kind: configuration.tokenKind, value: channel),
                environment: nil,
                replace: false
            )
            return (channel, true)
        }
        return RouteResponse(
            status: created ? 201 : 200,
            ["status": created ? "created" : "exists", "group": .string(group), "channel_id": .string(channel)]
        )
    }

    static func read(_ request: RouteRequest, _ context: RouteContext, _ configuration: Configuration) async throws -> RouteResponse {
        let group = try Self.group(request)
        let owner = configuration.owner(of: group)
        guard let channel = try await context.registrations.tokens(user: owner, kind: configuration.tokenKind).first else {
            throw RouteError.notFound("group '\(group)' has no broadcast channel", field: "group")
        }
        return RouteResponse(["group": .string(group), "channel_id": .string(channel.value)])
    }

    static func delete(
        _ request: RouteRequest,
        _ context: RouteContext,
        _ configuration: Configuration,
        _ holder: ChannelManagerHolder
    ) async throws -> RouteResponse {
        let group = try Self.group(request)
        let channels = try await context.registrations.tokens(user: configuration.owner(of: group), kind: configuration.tokenKind)
        guard channels.isEmpty || context.mode == .live else { throw RouteError(409, "a dry run deletes no channel on APNs", field: nil) }
        for channel in channels {
            do {
                try await holder.manager().delete(channel.value)
            } catch let failure as APNsChannelManager.Failure where failure.reason == "ChannelNotRegistered" {
                // Already gone on APNs: removing it here is all that is left to do.
            } catch let failure as APNsChannelManager.Failure {
                throw RouteError(502, "APNs refused to delete a channel: \(failure.reason)", field: nil)
            } catch let error as RouteError {
                throw error
            } catch {
                throw RouteError(502, "APNs could not be asked to delete a channel", field: nil)
            }
            _ = try await context.registrations.removeToken(
                kind: configuration.tokenKind,
                token: channel.value,
                unlessUpdatedAfter: nil
            )
        }
        return RouteResponse(["status": "deleted", "group": .string(group), "channels": .int(Int64(channels.count))])
    }

    static func group(_ request: RouteRequest) throws -> String {
        guard let group = request.parameters["group"], !group.isEmpty, group.count <= 128 else {
            throw RouteError.badRequest("missing or invalid group", field: "group")
        }
        return group
    }
}
