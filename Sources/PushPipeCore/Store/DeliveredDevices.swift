/// The devices of a user that got a watermark's items while another device's delivery failed:
/// a state row beside the watermark (same stage, key `key(of:)`), so both stores and every
/// daemon on a shared database see it without a table of its own.
///
/// A watermark moves only once every device got its items, so that a device whose delivery
/// failed gets them at a later check. Without this row, each of those checks sent them again
/// to the devices that had them already. The row is written only when a delivery was partial,
/// in the transaction of its outcome, and read with the watermarks themselves (one read per
/// check); once the watermark moves past it, it is ignored, and `forget_after` prunes it with
/// the watermarks.
public struct DeliveredDevices: Sendable, Equatable {
    /// The watermark value the devices were notified of (a timestamp).
    public var upTo: Double
    /// Devices as `address(kind:token:)`.
    public var devices: Set<String>

    public init(upTo: Double, devices: Set<String>) {
        self.upTo = upTo
        self.devices = devices
    }

    /// The row of `watermark`'s key.
    public static func key(of watermark: String) -> String { watermark + "#devices" }

    /// A device as the row names it, as a replay's addresses do.
    public static func address(kind: String, token: String) -> String { kind + ":" + token }

    /// A stored row; nil for anything else (a row written by a later version, say), which only
    /// means that no device is skipped.
    public init?(_ json: JSON?) {
        guard let upTo = json?["up_to"]?.doubleValue, let devices = json?["devices"]?.arrayValue else { return nil }
        self.init(upTo: upTo, devices: Set(devices.compactMap(\.stringValue)))
    }

    public var json: JSON {
        ["up_to": .double(upTo), "devices": .array(devices.sorted().map(JSON.string))]
    }

    /// The devices that got these items at `timestamp` or later.
    public func devices(notifiedOf timestamp: Double) -> Set<String> {
        upTo >= timestamp ? devices : []
    }
}

extension Array where Element == StateWrite {
    /// Devices that got every item of the event these writes are attached to: not sent to
    /// again. Empty unless a watermark is kept per device.
    public var alreadyDelivered: Set<String> {
        var result: Set<String>?
        for write in self {
            guard let devices = write.perDevice else { continue }
            result = result.map { $0.intersection(devices) } ?? devices
            if result?.isEmpty == true { return [] }
        }
        return result ?? []
    }
}
