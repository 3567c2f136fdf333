import AsyncHTTPClient

/// One HTTP exchange bounded as a whole. AsyncHTTPClient's deadline ends with the answer's
/// head, so a peer that sends a head and then nothing would hold its caller (a send, a webhook
/// batch, a registration) for ever; and only the start of a body is ever read.
package enum BoundedExchange {
    /// `exchange`'s result, or `HTTPClientError.deadlineExceeded` once `timeout` has passed.
    package static func run<T: Sendable>(within timeout: Duration, _ exchange: @escaping @Sendable () async throws -> T) async throws -> T {
        try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask { try await exchange() }
            group.addTask {
                try await Task.sleep(for: timeout)
                return nil
            }
            defer { group.cancelAll() }
            guard let result = try await group.next()!.flatMap({ $0 }) else { throw HTTPClientError.deadlineExceeded }
            return result
        }
    }

    /// At most `limit` bytes of a body; the rest is not waited for.
    package static func prefix(of body: HTTPClientResponse.Body, limit: Int) async throws -> [UInt8] {
        var bytes: [UInt8] = []
        for try await chunk in body {
            bytes.append(contentsOf: chunk.readableBytesView.prefix(limit - bytes.count))
            if bytes.count >= limit { break }
        }
        return bytes
    }
}
