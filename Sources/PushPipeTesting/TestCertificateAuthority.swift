import Crypto
import Foundation
import NIOSSL
import SwiftASN1
import X509

/// A throwaway CA and a server certificate for `localhost` / `127.0.0.1`, made at test time,
/// so stand-ins speak real TLS and clients verify them with `PUSHPIPE_CA_FILE` instead of
/// switching verification off. Nothing here ever touches the repository.
public struct TestCertificateAuthority: Sendable {
    public let caCertificatePEM: String
    public let serverCertificate: NIOSSLCertificate
    public let serverKey: NIOSSLPrivateKey
    /// The server's certificate and key as PEM files hold them (a server outside the test
    /// process reads them: PostgreSQL).
    public let serverCertificatePEM: String
    public let serverKeyPEM: String

    /// - Parameter serverNames: the names the server certificate is valid for (host names,
    ///   or IPv4 addresses).
    public init(serverNames: [String] = ["localhost", "127.0.0.1"]) throws {
        let caKey = P256.Signing.PrivateKey()
        // A name of its own: two CAs in one trust file must not share a subject, or the
        // verifier may pick the wrong one as the issuer.
        let caName = try DistinguishedName { CommonName("pushpipe throwaway test CA \(UUID().uuidString.prefix(8))") }
        let now = Date()
        let ca = try Certificate(
            version: .v3,
            serialNumber: .init(),
            publicKey: .init(caKey.publicKey),
            notValidBefore: now.addingTimeInterval(-3600),
            notValidAfter: now.addingTimeInterval(86400),
            issuer: caName,
            subject: caName,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
                KeyUsage(keyCertSign: true, cRLSign: true)
            },
            issuerPrivateKey: .init(caKey)
        )
        let serverKey = P256.Signing.PrivateKey()
        let server = try Certificate(
            version: .v3,
            serialNumber: .init(),
            publicKey: .init(serverKey.publicKey),
            notValidBefore: now.addingTimeInterval(-3600),
            notValidAfter: now.addingTimeInterval(86400),
            issuer: caName,
            subject: try DistinguishedName { CommonName(serverNames.first ?? "localhost") },
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                SubjectAlternativeNames(
                    serverNames.map { name in
                        let octets = name.split(separator: ".").compactMap { UInt8($0) }
                        return octets.count == 4 ? .ipAddress(ASN1OctetString(contentBytes: ArraySlice(octets))) : .dnsName(name)
                    }
                )
                try ExtendedKeyUsage([.serverAuth])
            },
            issuerPrivateKey: .init(caKey)
        )
        caCertificatePEM = try ca.serializeAsPEM().pemString
        serverCertificatePEM = try server.serializeAsPEM().pemString
        serverKeyPEM = serverKey.pemRepresentation
        var serializer = DER.Serializer()
        try serializer.serialize(server)
        self.serverCertificate = try NIOSSLCertificate(bytes: serializer.serializedBytes, format: .der)
        self.serverKey = try NIOSSLPrivateKey(bytes: Array(serverKey.pemRepresentation.utf8), format: .pem)
    }

    /// Writes the CA certificate where a client's `ca_file` / `PUSHPIPE_CA_FILE` can read it.
    public func writeCACertificate(to path: String) throws {
        try caCertificatePEM.write(toFile: path, atomically: true, encoding: .utf8)
    }

    public func serverContext() throws -> NIOSSLContext {
        var configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: [.certificate(serverCertificate)],
            privateKey: .privateKey(serverKey)
        )
        configuration.applicationProtocols = ["h2"]
        return try NIOSSLContext(configuration: configuration)
    }
}
