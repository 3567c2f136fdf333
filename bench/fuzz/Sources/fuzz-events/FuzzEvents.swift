import Crypto
import Dispatch
import Foundation
import FuzzDriver
import Logging
import PushPipeCore
import PushPipeSQLite
import PushPipeStages

/// Events come from backends, pollers and reply files: any JSON object. Rendered and prepared
/// through each shipped pipeline's renderer and transport (a real SQLite store holding one
/// token of each kind the pipelines use), an event either becomes requests or is refused with
/// a `StageError`; it never crashes (a number no header holds trapped the daemon at every
/// restart), and no request shown (dry runs, the tap) carries a whole token.
///
/// An input is the event's body; `user` in it names the recipient (`u1`, who has the tokens,
/// when absent).
let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pushpipe-fuzz-events-\(getpid())").path
nonisolated(unsafe) var loaded: (store: SQLiteStore, pipelines: [PipelineDefinition])?

let apnsToken = String(repeating: "a1b2", count: 16)
let fcmToken = "dXp1c2VyLXRva2VuOkFQQTkxYkhQUm1mRmlnWFl6V1h0cXZ6a0pCN0RyWVd6bmhKcU5XV3pJeFl6"
let webPushSubscription: JSON = [
    "endpoint": "https://push.example.net/send/fuzz-subscription-0123456789",
    "keys": [
        "p256dh": .string(P256.KeyAgreement.PrivateKey().publicKey.x963Representation.base64URLEncodedString()),
        "auth": .string(Data(repeating: 7, count: 16).base64URLEncodedString()),
    ],
]

func setUp() async throws -> (SQLiteStore, [PipelineDefinition]) {
    if let loaded { return loaded }
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    let store = try SQLiteStore(path: directory + "/state.sqlite")
    // The shipped pipelines as a dry run reads them: variables may be unset.
    let files = ConfigLoader.pipelineFiles(in: ["../../pipelines"])
    let result = await ConfigLoader(builtins: BuiltinStages.all, interpolation: EnvironmentInterpolation(environment: [:], allowsUndefined: true))
        .load(pipelineFiles: files, pluginsDirectory: "../../plugins.d")
    guard !result.pipelines.isEmpty else { fatalError("no shipped pipeline loaded: \(result.diagnostics)") }
    for pipeline in result.pipelines {
        for user in ["u1", "group:g1"] {
            for (kind, value) in [
                ("device", apnsToken), ("push-to-start", apnsToken + "01"), ("activity-update", apnsToken + "02"),
                ("fcm", fcmToken), ("webpush", webPushSubscription.compactText), ("broadcast-channel", "dHN0LWNoYW5uZWwtMDE="),
            ] {
                try await store.pipeline(pipeline.name).register(
                    DeviceToken(user: user, kind: kind, value: value, scope: kind == "activity-update" ? "a1" : ""),
                    environment: nil,
                    replace: false
                )
            }
        }
    }
    loaded = (store, result.pipelines)
    return (store, result.pipelines)
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzEvents(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    guard let body = try? JSON.parse(Data(bytes: start, count: count)), body.objectValue != nil else { return 0 }
    let done = DispatchSemaphore(value: 0)
    Task {
        let (store, pipelines) = try! await setUp()
        var logger = Logger(label: "fuzz")
        logger.logLevel = .critical
        for definition in pipelines {
            let event = Event(pipeline: definition.name, user: body["user"]?.textValue ?? "u1", body: body)
            let context = StageContext(pipeline: definition.name, stage: "renderer", store: store, logger: logger, mode: .dryRun)
            let notifications: [RenderedNotification]
            do {
                notifications = try await definition.renderer.stage.render(event, context: context)
            } catch is StageError {
                continue
            } catch {
                fatalError("\(definition.name)'s renderer threw \(type(of: error)), not a StageError: \(error)")
            }
            let transportContext = StageContext(pipeline: definition.name, stage: "transport", store: store, logger: logger, mode: .dryRun)
            for notification in notifications {
                let request: OutgoingRequest
                do {
                    request = try definition.transport.stage.prepare(notification, context: transportContext)
                } catch is StageError {
                    continue
                } catch {
                    fatalError("\(definition.name)'s transport threw \(type(of: error)), not a StageError: \(error)")
                }
                let shown = request.printable + request.maskedJSON.compactText
                for secret in [apnsToken, fcmToken, "fuzz-subscription-0123456789"] where shown.contains(secret) {
                    fatalError("\(definition.name) shows a whole token: \(shown)")
                }
            }
        }
        done.signal()
    }
    done.wait()
    return 0
}

/// SwiftPM's entry point for this executable: libFuzzer's driver, running the target above.
@_cdecl("fuzz_events_main")
public func fuzzEventsMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    runFuzzer(argc, argv) { start, size in fuzzEvents(start, size) }
}
