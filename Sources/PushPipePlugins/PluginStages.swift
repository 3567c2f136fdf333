import Foundation
import PushPipeCore

/// Runs each plugin stage as a child process speaking JSON lines (`PluginProcess`).
public struct ChildProcessPluginHost: PluginHost {
    public init() {}

    public func makeStage(_ manifest: PluginManifest, configuration: JSON, context: StageBuildContext) throws -> AnyStage {
        let process = PluginProcess(manifest: manifest, configuration: configuration, pipeline: context.pipeline, stage: context.stage)
        return switch manifest.kind {
        case .source: .source(PluginSource(process: process))
        case .filter: .filter(PluginFilter(process: process))
        case .renderer: .renderer(PluginRenderer(process: process, tokenKind: configuration["token_kind"]?.stringValue ?? "device"))
        case .transport: .transport(PluginTransport(process: process))
        }
    }
}

/// A filter served by a plugin: `filter` requests answer `{"event": ...}` or `{"drop": "reason"}`.
struct PluginFilter: Filter, LongRunningStage {
    let process: PluginProcess
    let dropCodes = PluginDropCodes()

    func run(context: StageContext) async throws { await process.run(context: context) }

    func apply(to event: Event, context: StageContext) async throws -> FilterResult {
        let result = try await process.request("filter", ["event": event.json])
        if let reason = result["drop"], reason != .null, reason != .bool(false) {
            return .drop(reason: reason.stringValue ?? "dropped by plugin \(process.manifest.name)", code: dropCodes.code(result["code"]))
        }
        var passed = event
        if let body = result["event"]?["body"] { passed.body = body }
        return .pass(passed)
    }
}

/// A renderer served by a plugin: `render` requests carry the event and the recipient tokens
/// of the configured `token_kind`; the answer lists `{"token", "payload", "options"}`.
struct PluginRenderer: Renderer, LongRunningStage {
    let process: PluginProcess
    let tokenKind: String

    func run(context: StageContext) async throws { await process.run(context: context) }

    func render(_ event: Event, context: StageContext) async throws -> [RenderedNotification] {
        let tokens = try await context.tokens(for: event, kind: tokenKind)
        let tokenJSON = tokens.map { JSON.object(["user": .string($0.user), "kind": .string($0.kind), "value": .string($0.value)]) }
        let result = try await process.request("render", ["event": event.json, "tokens": .array(tokenJSON)])
        return (result["notifications"]?.arrayValue ?? []).compactMap { item in
            guard let value = item["token"]?.stringValue, let token = tokens.first(where: { $0.value == value }) else { return nil }
            return RenderedNotification(token: token, payload: item["payload"] ?? .null, options: item["options"]?.objectValue ?? [:])
        }
    }
}

/// A transport served by a plugin: `send` requests carry the prepared request; the answer
/// names an outcome (`delivered`, `retry-after`, `drop-token`, `config-error`).
struct PluginTransport: Transport, LongRunningStage {
    let process: PluginProcess

    func run(context: StageContext) async throws { await process.run(context: context) }

    func prepare(_ notification: RenderedNotification, context: StageContext) throws -> OutgoingRequest {
        let headers = notification.options.sorted { $0.key < $1.key }.map { (name: $0.key, value: $0.value.textValue ?? "") }
        return OutgoingRequest(url: "plugin://\(process.manifest.name)", headers: headers, sending: notification)
    }

    func send(_ request: OutgoingRequest, context: StageContext) async -> TransportOutcome {
        let token: JSON = ["user": .string(request.token.user), "kind": .string(request.token.kind), "value": .string(request.token.value)]
        do {
            let result = try await process.request("send", ["request": request.json, "token": token])
            // The plugin's own code for metrics (`code`), as it gives it; its text for people.
            let reason = ProviderReason(
                code: result["code"]?.stringValue ?? ProviderReason.otherCode,
                result["reason"]?.stringValue ?? "plugin \(process.manifest.name)",
                throttlesSender: result["throttled"]?.boolValue ?? false
            )
            switch result["outcome"]?.stringValue {
            case "delivered": return .delivered(providerID: result["provider_id"]?.stringValue)
            case "drop-token": return .dropToken(reason: reason, since: result["since"]?.doubleValue)
            case "config-error": return .configError(reason: reason)
            default: return .retryAfter(seconds: result["seconds"]?.doubleValue, reason: reason)
            }
        } catch {
            return .retryAfter(seconds: nil, reason: .other("\(error)"))
        }
    }
}

/// A source served by a plugin: after a `start` request the plugin writes
/// `{"type": "event", "event": {"user": ..., "body": ...}}` lines whenever something happens.
struct PluginSource: Source, LongRunningStage {
    let process: PluginProcess

    func run(context: StageContext) async throws { await process.run(context: context) }

    func run(into sink: any EventSink, context: StageContext) async throws {
        process.setEventHandler { message in
            let event = Event(
                id: message["id"]?.stringValue ?? Event.makeID(),
                pipeline: context.pipeline,
                user: message["user"]?.textValue,
                body: message["body"] ?? .object([:])
            )
            do { try await sink.submit(event) } catch { context.logger.warning("event from plugin dropped: \(error)") }
        }
        _ = try await process.request("start", [:])
        await untilCancelled()
    }
}
