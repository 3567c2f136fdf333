import NIOCore
import NIOPosix
import PushPipeTesting

/// A plain-HTTP server on 127.0.0.1 standing for what sits inside the operator's network (a
/// metadata service): the hostile push service redirects here, and any connection at all is
/// one request too many. It counts connections and closes each at once.
final class ChaosInternalServer: Sendable {
    let port: Int
    private let channel: any Channel
    private let counter: Counter

    private init(port: Int, channel: any Channel, counter: Counter) {
        self.port = port
        self.channel = channel
        self.counter = counter
    }

    /// Connections opened to it.
    var connections: Int { counter.current }

    static func start() async throws -> ChaosInternalServer {
        let counter = Counter()
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                _ = counter.increment()
                return channel.close()
            }
            .bind(host: "127.0.0.1", port: 0).get()
        return ChaosInternalServer(port: channel.localAddress?.port ?? 0, channel: channel, counter: counter)
    }

    func stop() async { try? await channel.close() }
}
