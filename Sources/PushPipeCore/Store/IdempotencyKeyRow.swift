/// A key's row as both stores keep it, and what it says to a new request with the key: the
/// one rule, kept here so the two stores cannot disagree on it.
package struct IdempotencyKeyRow: Sendable {
    package var fingerprint: String
    package var status: Int?
    package var body: String?
    /// The request that took the key died before its answer was stored (its hold ran out on
    /// the store's clock).
    package var lapsed: Bool

    package init(fingerprint: String, status: Int?, body: String?, lapsed: Bool) {
        self.fingerprint = fingerprint
        self.status = status
        self.body = body
        self.lapsed = lapsed
    }

    /// nil: nothing was answered under the key and its holder is gone, so a new request takes
    /// it over (with its own body: the first one never got an answer).
    package func claim(fingerprint requested: String) throws -> IdempotencyClaim? {
        if let status, let body {
            return fingerprint == requested ? .answered(status: status, body: try JSON.parse(body)) : .usedForAnotherRequest
        }
        if lapsed { return nil }
        return fingerprint == requested ? .inProgress : .usedForAnotherRequest
    }
}
