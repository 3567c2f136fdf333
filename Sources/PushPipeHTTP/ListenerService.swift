import NIOCore
import PushPipeCore
import ServiceLifecycle

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A listener's service whose failure to bind names the listener and the option that moves
/// it: NIO's own `bind(descriptor:ptr:bytes:): Address already in use` names neither, and a
/// second daemon on one machine meets it on the admin listener's default port.
public struct ListenerService: Service {
    let listener: String
    let address: String
    /// What gives the listener another address, e.g. `--listen HOST:PORT`.
    let option: String
    let service: any Service

    public init(listener: String, address: String, option: String, service: any Service) {
        self.listener = listener
        self.address = address
        self.option = option
        self.service = service
    }

    public func run() async throws {
        do {
            try await service.run()
        } catch let error as IOError where [EADDRINUSE, EADDRNOTAVAIL, EACCES].contains(error.errnoCode) {
            throw ListenerBindError(listener: listener, address: address, option: option, reason: String(cString: strerror(error.errnoCode)))
        }
    }
}

public struct ListenerBindError: Error, CustomStringConvertible {
    public var listener: String
    public var address: String
    public var option: String
    public var reason: String

    public var description: String {
        "the \(listener) cannot listen on \(address): \(reason). Another daemon on this machine? Give each its own with \(option)"
    }
}
