import PostgresNIO

/// Which queued events of a source nobody works on, one expression for the claim and for the
/// move to a source's key: a move that took rows a claim would leave took events still being
/// sent (issue 45, finding 15a).
extension PostgresQuery.StringInterpolation {
    /// The row's lease ran out on the database's clock, and no grace after a gap in the
    /// source's renewals is running (`PostgresStore.renewLeases`), for a source whose leases
    /// last `lease` seconds.
    mutating func appendInterpolation(leaseLapsedIn pipeline: String, source: String, lease: Double) {
        appendLiteral("lease_until < \(PostgresStore.databaseNow)")
        appendLiteral(" AND NOT EXISTS (SELECT 1 FROM lease_clocks AS clock WHERE clock.pipeline = ")
        appendInterpolation(pipeline)
        appendLiteral(" AND clock.source = ")
        appendInterpolation(source)
        appendLiteral(" AND \(PostgresStore.databaseNow) - clock.resumed_at < greatest(")
        appendInterpolation(lease)
        appendLiteral(", least(clock.gap, ")
        appendInterpolation(PostgresStore.longestResumeGrace)
        appendLiteral(")))")
    }
}
