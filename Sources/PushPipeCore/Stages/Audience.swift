/// Who of every registered user a broadcast goes to, by a setting: those whose value is
/// `value` (the first of `keys` they set to one of `recognized`; a device's zone before their
/// own), and with `orUnset` those with none recognized. How "09:00 local" reaches each zone at
/// its own time: a broadcast becomes one copy per zone, each for its zone's users.
public struct Audience: Sendable, Equatable {
    public var keys: [String]
    public var recognized: Set<String>
    public var value: String
    public var orUnset: Bool
    /// The event it is a part of: counts (a throttle's) take its copies for one event.
    public var origin: String?

    public init(keys: [String], recognized: Set<String>, value: String, orUnset: Bool, origin: String? = nil) {
        self.keys = keys
        self.recognized = recognized
        self.value = value
        self.orUnset = orUnset
        self.origin = origin
    }

    /// Whether a user with `settings` is in it.
    public func includes(_ settings: [String: JSON]) -> Bool {
        for key in keys {
            if let text = settings[key]?.stringValue, recognized.contains(text) { return text == value }
        }
        return orUnset
    }

    /// As a queued event and a dead letter keep it.
    public var json: JSON {
        var fields: [String: JSON] = [
            "keys": .array(keys.map(JSON.string)), "recognized": .array(recognized.sorted().map(JSON.string)), "value": .string(value),
            "or_unset": .bool(orUnset),
        ]
        if let origin { fields["origin"] = .string(origin) }
        return .object(fields)
    }

    public init?(json: JSON?) {
        guard let json, let keys = json["keys"]?.arrayValue?.compactMap(\.stringValue), let value = json["value"]?.stringValue else { return nil }
        self.init(
            keys: keys,
            recognized: Set(json["recognized"]?.arrayValue?.compactMap(\.stringValue) ?? []),
            value: value,
            orUnset: json["or_unset"]?.boolValue ?? false,
            origin: json["origin"]?.stringValue
        )
    }
}
