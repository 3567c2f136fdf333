import PostgresNIO

extension PostgresQuery.StringInterpolation {
    /// A duration binds as seconds, the unit the schema's times (`double precision` UNIX
    /// seconds) are compared in.
    mutating func appendInterpolation(_ duration: Duration) {
        appendInterpolation(duration.inSeconds)
    }
}
