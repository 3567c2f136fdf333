/// A configuration's `Duration`, read from the seconds a schema's `.duration` key holds once
/// validated (`250ms` and `5m` are seconds by then): `@Seconds var timeout: Duration`.
@propertyWrapper
public struct Seconds: Decodable, Sendable, Equatable {
    public var wrappedValue: Duration

    public init(wrappedValue: Duration) {
        self.wrappedValue = wrappedValue
    }

    /// Whole nanoseconds, so `0.1` decodes to what `.milliseconds(100)` is; a value no file
    /// passes (negative, over a year, not finite: a configuration made in code) is an error,
    /// not a trap.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let seconds = try container.decode(Double.self)
        guard seconds.isFinite, (0...SchemaValidator.maximumDuration).contains(seconds) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "\(seconds) s is not a duration from 0 to a year")
        }
        wrappedValue = .nanoseconds(Int64((seconds * 1e9).rounded()))
    }
}
