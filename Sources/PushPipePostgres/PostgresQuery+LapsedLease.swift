import PostgresNIO

/// Which items of a kind nobody works on, one expression for the claim and for the move of
/// queued events to a source's key: a move that took rows a claim would leave would take events
/// still being sent.
extension PostgresQuery.StringInterpolation {
    /// The row's lease ran out on the database's clock, and, if somebody held it, no grace after
    /// a gap in the kind's renewals is running (`PostgresWorkQueue.renew`): nobody renewed for
    /// longer than a lease (the database was away, or every daemon was), so its holder may still
    /// be working on it, and claims wait until the holders, reconnecting at their pools' own
    /// pace, have renewed: a lease, or the length of the gap (up to a limit), after the first
    /// renewal or claim that followed it. Items nobody held (new, released, retried) are free.
    ///
    /// A claim starts that grace itself (`startGrace`), in the same statement, so it treats a
    /// gap not yet closed as a running grace. A move never starts it: nobody of this version
    /// renews a key of an earlier one, so each pass would start it again and the rows of
    /// daemons that are gone would never move. It waits instead while the kind's renewals
    /// stopped less than a lease and the longest grace ago.
    mutating func appendInterpolation(lapsedIn pipeline: String, kind: String, lease: Duration, claiming: Bool, holder: String = "owner") {
        let now = PostgresStore.databaseNow
        appendLiteral("lease_until < \(now) AND (\(holder) IS NULL OR NOT EXISTS (SELECT 1 FROM lease_clocks AS clock WHERE clock.pipeline = ")
        appendInterpolation(pipeline)
        appendLiteral(" AND clock.source = ")
        appendInterpolation(kind)
        appendLiteral(" AND (\(now) - clock.resumed_at < greatest(")
        appendInterpolation(lease)
        appendLiteral(", least(clock.gap, \(PostgresStore.longestResumeGrace.inSeconds)))")
        if claiming {
            appendLiteral(" OR \(now) - clock.renewed_at > ")
            appendInterpolation(lease)
        } else {
            appendLiteral(" OR \(now) - clock.renewed_at BETWEEN ")
            appendInterpolation(lease)
            appendLiteral(" AND ")
            appendInterpolation(lease + PostgresStore.longestResumeGrace)
        }
        appendLiteral(")))")
    }

    /// Starts the grace after a gap in the kind's renewals: a common table expression for a
    /// claim (`lapsedIn(…, claiming: true)`).
    mutating func appendInterpolation(startGrace pipeline: String, kind: String, lease: Duration) {
        let now = PostgresStore.databaseNow
        appendLiteral("grace AS (UPDATE lease_clocks SET resumed_at = \(now), gap = \(now) - renewed_at, renewed_at = \(now) WHERE pipeline = ")
        appendInterpolation(pipeline)
        appendLiteral(" AND source = ")
        appendInterpolation(kind)
        appendLiteral(" AND \(now) - renewed_at > ")
        appendInterpolation(lease)
        appendLiteral(" RETURNING 1)")
    }
}
