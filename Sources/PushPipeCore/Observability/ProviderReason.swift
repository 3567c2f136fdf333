/// The code of a provider's answer (`BadDeviceToken`, `UNREGISTERED`, `HTTP_503`), taken from
/// a transport outcome's reason, which is written for people ("BadDeviceToken (check that
/// ...)", "400 BadTopic", "UNREGISTERED: Requested entity was not found."). Metrics need the
/// code alone: the rest varies per request and would make a time series of every message.
public enum ProviderReason {
    public static func code(_ reason: String) -> String {
        var words = reason.split(whereSeparator: { $0 == " " || $0 == ":" || $0 == "(" || $0 == "," }).makeIterator()
        guard var word = words.next() else { return "other" }
        // "400 BadTopic": APNs' status, then its reason.
        if word.count == 3, word.allSatisfy(\.isNumber), let next = words.next() { word = next }
        if word == "HTTP", let status = words.next(), status.count == 3, status.allSatisfy(\.isNumber) { return "HTTP_\(status)" }
        guard word.count >= 4, word.count <= 48, let first = word.first, first.isUppercase,
              word.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") }) else { return "other" }
        // APNs codes are CamelCase with lower-case letters; FCM codes are UPPER_SNAKE. "APNs" and
        // "FCM" start our own messages ("APNs credentials: ..."), which are not provider codes.
        if word == "APNs" || word == "FCM" { return "other" }
        return String(word)
    }
}
