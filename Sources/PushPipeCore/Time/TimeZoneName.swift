import Foundation

/// IANA zone names, as users set them and pipelines name them: checked once where they enter
/// (a settings route answers 422, a pipeline file does not load) so that timing rules never
/// meet a zone they cannot read. Offsets such as `GMT+5` are refused: they know no daylight
/// saving, which is what a user's zone is for.
public enum TimeZoneName {
    public static let expected = "an IANA time zone name, such as Europe/Berlin or America/New_York"
    /// The setting a register route keeps a device's zone in (`time_zone_field`): the zone of
    /// the user's most recently registered device that sent one.
    public static let deviceSetting = "device_time_zone"

    /// The zone `name` names on this machine, or nil.
    public static func zone(_ name: String) -> TimeZone? {
        guard !name.isEmpty, name.utf8.count <= 64, name.unicodeScalars.allSatisfy({ $0.isASCII && $0.value > 32 }), !name.contains("+"),
            !name.hasPrefix("Etc/GMT"), !name.hasPrefix("GMT"), name != "Factory"
        else { return nil }
        return TimeZone(identifier: name)
    }
}
