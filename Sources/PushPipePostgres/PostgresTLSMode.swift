import Foundation
import NIOSSL
import PostgresNIO
import PushPipeCore

/// `sslmode` and `sslrootcert` as libpq means them, so a URL that works with `psql` means the
/// same here. The verification a mode promises is the point: `prefer` and `require` encrypt
/// against a passive listener only; `verify-ca` also proves the server holds a certificate
/// of the given CA, `verify-full` also that it is the host named in the URL.
public struct PostgresTLSMode: Sendable, Equatable, CustomStringConvertible {
    public enum Mode: String, Sendable, CaseIterable {
        /// Never TLS.
        case disable
        /// TLS when the server offers it, not verified. (libpq tries plain text first; the
        /// pool asks for TLS first. Either way the connection may be plain and is not verified.)
        case allow
        /// TLS when the server offers it, not verified (libpq's default).
        case prefer
        /// TLS or no connection, not verified (unless `sslrootcert` is given: then, as in
        /// libpq, `verify-ca`).
        case require
        case verifyCA = "verify-ca"
        case verifyFull = "verify-full"
    }

    /// Where the CAs to verify against come from.
    public enum Roots: Sendable, Equatable {
        /// The system's trust store (`sslrootcert=system`, or no `sslrootcert`: pushpipe reads
        /// no `~/.postgresql/root.crt` of the user who happens to run it).
        case system
        /// A PEM file of CA certificates (`sslrootcert=PATH`).
        case file(String)
    }

    public var mode: Mode
    public var roots: Roots

    /// - Throws: `InvalidLocation` for an unknown mode or a root file that
    ///   cannot be read as PEM certificates (told now, not at the first connection).
    public init(sslmode: String?, sslrootcert: String?) throws {
        let text = sslmode ?? "prefer"
        guard let mode = Mode(rawValue: text) else {
            throw InvalidLocation(description: "sslmode '\(text)' is not one of \(Mode.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        switch sslrootcert {
        case nil, "system":
            roots = .system
            // libpq: `sslrootcert=system` makes any mode below verify-full verify-full.
            self.mode = sslrootcert == "system" ? .verifyFull : mode
        case let path?:
            do {
                guard try !NIOSSLCertificate.fromPEMFile(path).isEmpty else { throw CocoaError(.fileReadCorruptFile) }
            } catch {
                throw InvalidLocation(description: "sslrootcert '\(path)' cannot be read as PEM certificates (\(error))")
            }
            roots = .file(path)
            self.mode = mode == .require ? .verifyCA : mode
        }
    }

    public var description: String {
        switch roots {
        case .system: "sslmode=\(mode.rawValue)"
        case .file(let path): "sslmode=\(mode.rawValue)&sslrootcert=\(path)"
        }
    }

    /// The pool's TLS setting for this mode.
    var clientTLS: PostgresClient.Configuration.TLS {
        switch mode {
        case .disable: .disable
        case .allow, .prefer: .prefer(configuration)
        case .require, .verifyCA, .verifyFull: .require(configuration)
        }
    }

    /// The same for one connection of its own.
    var connectionTLS: PostgresConnection.Configuration.TLS {
        get throws {
            switch mode {
            case .disable: .disable
            case .allow, .prefer: .prefer(try NIOSSLContext(configuration: configuration))
            case .require, .verifyCA, .verifyFull: .require(try NIOSSLContext(configuration: configuration))
            }
        }
    }

    private var configuration: TLSConfiguration {
        var tls = TLSConfiguration.makeClientConfiguration()
        if case .file(let path) = roots { tls.trustRoots = .file(path) }
        tls.certificateVerification =
            switch mode {
            case .disable, .allow, .prefer, .require: .none
            case .verifyCA: .noHostnameVerification
            case .verifyFull: .fullVerification
            }
        return tls
    }
}
