extension Duration {
    /// The duration in seconds, for the edges that speak them: SQL intervals, JSON, HTTP headers.
    public var inSeconds: Double {
        let parts = components
        return Double(parts.seconds) + Double(parts.attoseconds) / 1e18
    }

}
