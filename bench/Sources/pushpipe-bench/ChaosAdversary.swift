import Foundation
import PushPipeCore
import PushPipeTesting
import Synchronization

/// The adversarial chaos soak's counterparts (issue 45): Web Push subscribers whose push
/// services redirect into the operator's network, answer `429 Retry-After: 3600`, answer 400
/// with NUL bytes and invalid UTF-8, or never answer, next to one well-behaved push service;
/// and an audience of thousands for broadcasts whose renderer fails on random pages while
/// the fault file exists.
final class ChaosAdversary: Sendable {
    static let webUsers = 10
    static let broadcastUsers = 2_100

    let good: WebPushStandIn
    let redirecting: WebPushStandIn
    let throttling: WebPushStandIn
    let garbling: WebPushStandIn
    let silent: SilentTLSServer
    let internalServer: ChaosInternalServer
    let environment: [String: String]
    /// While this file exists the broadcast renderer fails a share of its pages.
    let renderFaults: String

    private init(
        good: WebPushStandIn,
        redirecting: WebPushStandIn,
        throttling: WebPushStandIn,
        garbling: WebPushStandIn,
        silent: SilentTLSServer,
        internalServer: ChaosInternalServer,
        environment: [String: String],
        renderFaults: String
    ) {
        self.good = good
        self.redirecting = redirecting
        self.throttling = throttling
        self.garbling = garbling
        self.silent = silent
        self.internalServer = internalServer
        self.environment = environment
        self.renderFaults = renderFaults
    }

    static func start(in directory: TemporaryDirectory) async throws -> ChaosAdversary {
        let authority = try TestCertificateAuthority()
        try authority.writeCACertificate(to: directory.file("webpush-ca.pem"))
        // Generous: the debug build starts slowly on a loaded machine.
        let status = try await DaemonProcess.run(arguments: ["vapid", "generate", directory.file("vapid.pem")], directory: directory.path) {
            try await $0.waitForExit(timeout: 120)
        }
        guard status == 0 else { throw ChaosSetupError("pushpipe vapid generate exited \(status)") }
        let internalServer = try await ChaosInternalServer.start()
        let good = try await WebPushStandIn.start(authority: authority, http2: true)
        // Over HTTP/2 as the browsers' push services, and over HTTP/1.1 (each daemon first asks
        // an HTTP/1.1-only service for h2 by ALPN, then remembers it speaks HTTP/1.1).
        let redirecting = try await WebPushStandIn.start(authority: authority, http2: true)
        redirecting.answerAlways(
            .init(status: 307, headers: [("location", "http://127.0.0.1:\(internalServer.port)/latest/meta-data/iam/security-credentials/")])
        )
        let throttling = try await WebPushStandIn.start(authority: authority)
        throttling.answerAlways(.init(status: 429, retryAfter: 3600))
        let garbling = try await WebPushStandIn.start(authority: authority, http2: true)
        garbling.answerAlways(
            .init(status: 400, rawBody: Data([0x7B, 0x22, 0x65, 0x00, 0x00, 0xFF, 0xFE, 0xC3, 0x28, 0x22, 0x3A, 0x00, 0xED, 0xA0, 0x80, 0x7D]))
        )
        let silent = try await SilentTLSServer.start(authority: authority)
        let renderFaults = directory.file("render-faults")
        FileManager.default.createFile(atPath: renderFaults, contents: Data())
        return ChaosAdversary(
            good: good,
            redirecting: redirecting,
            throttling: throttling,
            garbling: garbling,
            silent: silent,
            internalServer: internalServer,
            environment: [
                "WEBPUSH_CA_FILE": directory.file("webpush-ca.pem"), "VAPID_KEY_PATH": directory.file("vapid.pem"),
                "CHAOS_RENDER_FAULTS": renderFaults,
            ],
            renderFaults: renderFaults
        )
    }

    /// The daemons' switches: every stand-in's origin may be private; the internal server's may not.
    var allowedOrigins: [String] {
        [good.origin, redirecting.origin, throttling.origin, garbling.origin, silent.baseURL].flatMap { ["--allow-private-endpoint", $0] }
    }

    static func broadcastToken(_ index: Int) -> String { String(format: "%064x", index + 1) }

    /// Every Web Push user has a well-behaved subscription; users 0-3 also one hostile
    /// subscription each, user 4 all four; and the broadcast audience, one token per user.
    func register(through client: HTTPTestClient) async throws {
        for user in 0..<Self.webUsers {
            var subscriptions = [good.subscribe("good-\(user)")]
            let hostile = [
                redirecting.subscribe("redirect-\(user)"), throttling.subscribe("throttle-\(user)"), garbling.subscribe("garble-\(user)"),
                hang(garbling.subscribe("hang-\(user)")),
            ]
            if user < 4 { subscriptions.append(hostile[user]) }
            if user == 4 { subscriptions += hostile }
            for subscription in subscriptions {
                let response = try await SetupRequest.post(
                    client,
                    "/soak/web/subscriptions",
                    ["user": .string("w-\(user)"), "subscription": subscription]
                )
                guard response.status == 200 else { throw ChaosSetupError("web subscription for w-\(user) refused: \(response.text)") }
            }
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for lane in 0..<8 {
                group.addTask {
                    for index in stride(from: lane, to: Self.broadcastUsers, by: 8) {
                        let response = try await SetupRequest.post(
                            client,
                            "/soak/broadcast/register",
                            ["user_id": .string(String(format: "bu-%05d", index)), "device_token": .string(Self.broadcastToken(index))]
                        )
                        guard response.status == 200 else { throw ChaosSetupError("broadcast user \(index) refused: \(response.text)") }
                    }
                }
            }
            try await group.waitForAll()
        }
    }

    /// A subscription whose endpoint is the server that never answers (its keys are real ones).
    private func hang(_ subscription: JSON) -> JSON {
        var object = subscription.objectValue ?? [:]
        object["endpoint"] = .string("\(silent.baseURL)/push/hang")
        return .object(object)
    }

    /// Web Push events to random users and, every `broadcastEvery` seconds, a broadcast.
    func produce(
        until deadline: ContinuousClock.Instant,
        webRate: Double,
        broadcastEvery: Double,
        ledger: ChaosLedger,
        random: SeededRandom,
        target: () -> HTTPTestClient?
    ) async {
        var nextBroadcast = ContinuousClock.now + .seconds(2)
        let tick = 1 / webRate
        while ContinuousClock.now < deadline {
            if let client = target() {
                let id = ledger.nextID("w")
                let user = "w-\(random.next(Self.webUsers))"
                if let response = try? await client.request(
                    "POST",
                    "/soak/web/events",
                    json: ["user": .string(user), "id": .string(id)],
                    timeout: 5
                ),
                    response.status == 202
                {
                    ledger.acceptTimed(id)
                }
                if ContinuousClock.now >= nextBroadcast {
                    nextBroadcast = ContinuousClock.now + .seconds(broadcastEvery)
                    let id = ledger.nextID("b")
                    if let response = try? await client.request(
                        "POST",
                        "/soak/broadcasts",
                        json: ["id": .string(id), "text": "to every user"],
                        timeout: 5
                    ),
                        response.status == 202
                    {
                        ledger.accept((0..<Self.broadcastUsers).map { "\(id)#\(Self.broadcastToken($0))" })
                    }
                }
            }
            try? await Task.sleep(for: .seconds(tick))
        }
    }

    /// Hands each message the well-behaved push service read to the ledger, with the process
    /// that sent it (its VAPID subject), until cancelled.
    func collect(into ledger: ChaosLedger) async {
        var seen = 0
        while !Task.isCancelled {
            let messages = good.messages
            for message in messages[seen...] {
                guard let id = message.json?["data"]?["id"]?.stringValue else { continue }
                let instance = message.vapidSubject.flatMap { Int($0.dropFirst("mailto:chaos-".count).prefix { $0.isNumber }) } ?? -1
                ledger.delivered(id, by: instance)
            }
            seen = messages.count
            try? await Task.sleep(for: .milliseconds(50))
        }
    }

    /// What the hostile push services saw: the stand-ins count messages they read.
    var hostileMessages: Int { redirecting.messages.count + throttling.messages.count + garbling.messages.count }

    func stop() async {
        for standIn in [good, redirecting, throttling, garbling] { await standIn.stop() }
        await silent.stop()
        await internalServer.stop()
    }
}

struct ChaosSetupError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
