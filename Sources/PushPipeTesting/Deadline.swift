/// Runs `body` and gives its value if it finishes within `limit`, nil (and `body` cancelled) if
/// not. A test that asks "did this not wait out the hour?" then fails at its own deadline
/// rather than an hour later, and its limit can be generous enough for a busy machine.
public func finished<T: Sendable>(within limit: Duration, _ body: @escaping @Sendable () async -> T) async -> T? {
    await withTaskGroup(of: T?.self) { group in
        group.addTask { await body() }
        group.addTask {
            try? await Task.sleep(for: limit)
            return nil
        }
        let first = await group.next() ?? nil
        group.cancelAll()
        return first
    }
}
