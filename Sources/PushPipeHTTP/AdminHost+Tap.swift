import Foundation
import Hummingbird
import PushPipeCore
import ServiceLifecycle

extension AdminHost {
    /// How often a tap gets a comment while nothing happens: a write is how a client that left
    /// is found (the second write after it left fails), and that frees its slot.
    static let tapHeartbeat: Duration = .seconds(1)
    /// What a tap refused for want of a slot is told to wait: long enough for a tap that left to
    /// be found (two heartbeats), so its retry gets the slot.
    static var tapRetryAfter: Int { Int(tapHeartbeat.components.seconds) * 2 + 1 }

    /// `GET /tap?pipeline=&stage=`: server-sent events, one JSON record per `data:` line, until
    /// the client goes away or the daemon stops. A comment every `tapHeartbeat` finds a client
    /// that left while nothing happened.
    func tap(_ request: Request) -> Response {
        let query = request.uri.queryParameters
        let filter = TapHub.Filter(pipeline: query["pipeline"].map(String.init), stage: query["stage"].map(String.init))
        let hub = telemetry.tap
        // Subscribed before answering, within the bound: each tap holds a buffer and a task.
        guard let subscription = hub.subscribe(filter, limit: access.maximumTaps) else {
            var response = HTTPHost.response(
                status: 429,
                body: RouteError(
                    429,
                    "\(access.maximumTaps) taps are streaming already; close one or raise --admin-max-taps",
                    field: nil
                ).body
            )
            response.headers[.retryAfter] = String(Self.tapRetryAfter)
            return response
        }
        var headers = HTTPFields()
        headers[.contentType] = "text/event-stream"
        headers[.cacheControl] = "no-store"
        return Response(
            status: .ok,
            headers: headers,
            body: ResponseBody { writer in
                defer { hub.unsubscribe(subscription) }
                try await writer.write(ByteBuffer(string: ": pushpipe tap\n\n"))
                try await withGracefulShutdownHandler {
                    try await withThrowingTaskGroup(of: Void.self) { group in
                        group.addTask {
                            while !Task.isCancelled {
                                try await Task.sleep(for: Self.tapHeartbeat)
                                subscription.heartbeat()
                            }
                        }
                        for await record in subscription.records {
                            let missed = subscription.takeMissed()
                            if missed > 0 {
                                let notice: JSON = ["kind": "tap", "what": "missed", "count": .int(Int64(missed))]
                                try await writer.write(ByteBuffer(string: "data: \(notice.compactText)\n\n"))
                            }
                            // The heartbeat is a comment, which clients ignore.
                            try await writer.write(ByteBuffer(string: record == .null ? ": alive\n\n" : "data: \(record.compactText)\n\n"))
                        }
                        group.cancelAll()
                    }
                } onGracefulShutdown: {
                    hub.unsubscribe(subscription)
                }
                try await writer.finish(nil)
            }
        )
    }
}
