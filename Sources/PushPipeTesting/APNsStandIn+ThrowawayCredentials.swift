import Crypto

extension APNsStandIn {
    /// A stand-in trusting a key made for this test, set up as pushpipe needs it: the key is
    /// written as a `.p8` to `keyFile` in `directory`, the stand-in's CA to `ca.pem`, and
    /// `environment` holds the variables the shipped pipelines read to reach it.
    /// - Parameters:
    ///   - signingKey: the key written for pushpipe to sign with; by default the trusted one.
    ///   - maxConcurrentStreams: the stand-in's SETTINGS_MAX_CONCURRENT_STREAMS.
    public static func startWithThrowawayCredentials(
        in directory: TemporaryDirectory,
        teamID: String,
        keyID: String,
        keyFile: String = "AuthKey.p8",
        signingKey: P256.Signing.PrivateKey? = nil,
        maxConcurrentStreams: Int = 100
    )
        async throws -> (standIn: APNsStandIn, environment: [String: String])
    {
        let key = P256.Signing.PrivateKey()
        try directory.write(keyFile, (signingKey ?? key).pemRepresentation)
        let authority = try TestCertificateAuthority()
        try authority.writeCACertificate(to: directory.file("ca.pem"))
        let standIn = try await start(
            credentials: .init(teamID: teamID, keyID: keyID, publicKey: key.publicKey),
            authority: authority,
            maxConcurrentStreams: maxConcurrentStreams
        )
        let environment = [
            "APNS_TEAM_ID": teamID, "APNS_KEY_ID": keyID, "APNS_KEY_PATH": directory.file(keyFile),
            // The stand-in serves sends and channel management on one port; Apple has two hosts.
            "APNS_BASE_URL": standIn.baseURL, "APNS_CHANNELS_BASE_URL": standIn.baseURL, "PUSHPIPE_CA_FILE": directory.file("ca.pem"),
        ]
        return (standIn, environment)
    }
}
