import Crypto
import Foundation
import GRDB
import PushPipeTesting

/// The shipped `pipelines/ogs-turns.yaml` in the real daemon, with OGS and APNs stand-ins.
struct OGSFlowHarness: Sendable {
    let directory: TemporaryDirectory
    let ogs: OGSStandIn
    let apns: APNsStandIn
    let environment: [String: String]

    static let player: Int64 = 1_783_478
    static let token = "808605752f2f8d4c9ae1b3f4e9d2c7a1808605752f2f8d4c9ae1b3f4e9d2c7a1"

    /// - Parameter privateCA: OGS served over HTTPS by a CA of its own, trusted only through
    ///   `PUSHPIPE_CA_FILE` (which then holds the APNs stand-in's CA and this one).
    static func make(environment extra: [String: String] = [:], privateCA: Bool = false) async throws -> OGSFlowHarness {
        let directory = try TemporaryDirectory("ogs")
        let (apns, apnsEnvironment) = try await APNsStandIn.startWithThrowawayCredentials(in: directory, teamID: "OGSTEAM001", keyID: "OGSKEY0001")
        let ogsAuthority = privateCA ? try TestCertificateAuthority() : nil
        if let ogsAuthority, let caFile = apnsEnvironment["PUSHPIPE_CA_FILE"] {
            let both = try String(contentsOfFile: caFile, encoding: .utf8) + "\n" + ogsAuthority.caCertificatePEM
            try both.write(toFile: caFile, atomically: true, encoding: .utf8)
        }
        let ogs = try await OGSStandIn.start(authority: ogsAuthority)
        let pipeline = try String(contentsOf: SvenFlowTests.repository.appendingPathComponent("pipelines/ogs-turns.yaml"), encoding: .utf8)
        try directory.write("pipelines/ogs-turns.yaml", pipeline)
        var environment = apnsEnvironment.merging([
            "OGS_API_BASE": ogs.baseURL,
            // Periodic checks only at start; tests drive the rest with registrations and /check.
            "CHECK_INTERVAL_SECONDS": "3600",
        ]) { _, new in new }
        environment.merge(extra) { _, new in new }
        return OGSFlowHarness(directory: directory, ogs: ogs, apns: apns, environment: environment)
    }

    func daemon<T: Sendable>(_ body: @Sendable (DaemonProcess, HTTPTestClient) async throws -> T) async throws -> T {
        try await DaemonProcess.run(
            arguments: ["run", "--listen", "127.0.0.1:0", "--state", "state.sqlite", "--plugins", "none"],
            directory: directory.path,
            environment: environment
        ) { daemon in
            try await body(daemon, HTTPTestClient(port: try await daemon.port()))
        }
    }

    func close() async {
        await ogs.stop()
        await apns.stop()
        directory.remove()
    }

    /// Runs `body` and always stops the stand-ins.
    static func with(environment: [String: String] = [:], privateCA: Bool = false, _ body: (OGSFlowHarness) async throws -> Void) async throws {
        let harness = try await make(environment: environment, privateCA: privateCA)
        try await withCleanup({ try await body(harness) }, cleanup: harness.close)
    }

    static func game(_ id: Int64, _ name: String, yourTurn: Bool, lastMove: Int64) -> OGSStandIn.Game {
        OGSStandIn.Game(id: id, name: name, black: 356, white: player, currentPlayer: yourTurn ? player : 356, lastMove: lastMove)
    }

    static var nowMilliseconds: Int64 { Int64(Date().timeIntervalSince1970 * 1000) }

    func watermarks() async throws -> Int {
        try StateFile(path: directory.file("state.sqlite")).count("stage_state")
    }
}
