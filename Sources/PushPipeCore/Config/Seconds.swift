/// A configuration's `Duration`, read from the seconds a schema's `.duration` key holds once
/// validated (`250ms` and `5m` are seconds by then): `@Seconds var timeout: Duration`.
@propertyWrapper
public struct Seconds: Decodable, Sendable, Equatable {
    public var wrappedValue: Duration

    public init(wrappedValue: Duration) {
        self.wrappedValue = wrappedValue
    }

    public init(from decoder: any Decoder) throws {
        wrappedValue = .seconds(try decoder.singleValueContainer().decode(Double.self))
    }
}
