/// ISO 8601 texts of an instant in UTC, computed with integer arithmetic.
///
/// Every event's template context carries `time_iso` and `time_iso_micro`; Foundation's
/// formatters and calendars are slow per call (ICU, locale lookups), and would be a large
/// share of the whole APNs path. The proleptic Gregorian conversion is Howard
/// Hinnant's `civil_from_days`.
enum UTCTimestamp {
    /// `2025-09-21T17:05:19.701Z`: milliseconds rounded down, like `time_ms`.
    static func milliseconds(sinceEpoch milliseconds: Int64) -> String {
        let (seconds, fraction) = floorDivide(milliseconds, 1000)
        var bytes = dateTime(secondsSinceEpoch: seconds)
        bytes.append(UInt8(ascii: "."))
        append(fraction, digits: 3, to: &bytes)
        bytes.append(UInt8(ascii: "Z"))
        return String(decoding: bytes, as: UTF8.self)
    }

    /// `2022-04-08T15:17:41.900560`: microseconds and no zone, as Python's
    /// `datetime.utcnow().isoformat()` writes it (Pong's original timestamps).
    static func microseconds(sinceEpoch microseconds: Int64) -> String {
        let (seconds, fraction) = floorDivide(microseconds, 1_000_000)
        var bytes = dateTime(secondsSinceEpoch: seconds)
        bytes.append(UInt8(ascii: "."))
        append(fraction, digits: 6, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// `YYYY-MM-DDTHH:MM:SS`.
    private static func dateTime(secondsSinceEpoch seconds: Int64) -> [UInt8] {
        let (days, secondOfDay) = floorDivide(seconds, 86_400)
        let (year, month, day) = civil(fromDays: days)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(32)
        append(year, digits: 4, to: &bytes)
        bytes.append(UInt8(ascii: "-"))
        append(month, digits: 2, to: &bytes)
        bytes.append(UInt8(ascii: "-"))
        append(day, digits: 2, to: &bytes)
        bytes.append(UInt8(ascii: "T"))
        append(secondOfDay / 3600, digits: 2, to: &bytes)
        bytes.append(UInt8(ascii: ":"))
        append(secondOfDay / 60 % 60, digits: 2, to: &bytes)
        bytes.append(UInt8(ascii: ":"))
        append(secondOfDay % 60, digits: 2, to: &bytes)
        return bytes
    }

    static func civil(fromDays days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let shifted = days + 719_468
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shiftedMonth = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * shiftedMonth + 2) / 5 + 1
        let month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    private static func floorDivide(_ value: Int64, _ divisor: Int64) -> (quotient: Int64, remainder: Int64) {
        let remainder = value % divisor
        return remainder < 0 ? (value / divisor - 1, remainder + divisor) : (value / divisor, remainder)
    }

    /// Decimal digits, zero-padded to `digits`; a negative year keeps its sign.
    private static func append(_ value: Int64, digits: Int, to bytes: inout [UInt8]) {
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        let magnitude = value.magnitude
        var divisor: UInt64 = 1
        var count = 1
        while count < digits || magnitude / divisor >= 10 {
            divisor *= 10
            count += 1
        }
        while divisor > 0 {
            bytes.append(UInt8(ascii: "0") + UInt8(magnitude / divisor % 10))
            divisor /= 10
        }
    }
}
