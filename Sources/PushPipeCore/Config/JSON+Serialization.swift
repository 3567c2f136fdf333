import Foundation

extension JSON {
    func write(to output: inout [UInt8], pretty: Bool, indent: Int) {
        switch self {
        case .null: output.append(contentsOf: "null".utf8)
        case .bool(let value): output.append(contentsOf: (value ? "true" : "false").utf8)
        case .int(let value): output.append(contentsOf: String(value).utf8)
        case .double(let value):
            output.append(contentsOf: (value.isFinite ? JSON.format(value) : "null").utf8)
        case .string(let value): JSON.writeString(value, to: &output)
        case .array(let elements):
            if elements.isEmpty {
                output.append(contentsOf: "[]".utf8)
                return
            }
            output.append(UInt8(ascii: "["))
            for (index, element) in elements.enumerated() {
                if index > 0 { output.append(UInt8(ascii: ",")) }
                JSON.newline(&output, pretty: pretty, indent: indent + 1)
                element.write(to: &output, pretty: pretty, indent: indent + 1)
            }
            JSON.newline(&output, pretty: pretty, indent: indent)
            output.append(UInt8(ascii: "]"))
        case .object(let members):
            if members.isEmpty {
                output.append(contentsOf: "{}".utf8)
                return
            }
            output.append(UInt8(ascii: "{"))
            // Keys in order, so equal objects serialize equally. The order is sorted on the stack:
            // payloads are serialized once per notification, and a sorted copy would be a heap allocation per object.
            withUnsafeTemporaryAllocation(of: Dictionary<String, JSON>.Index.self, capacity: members.count) { buffer in
                var order = buffer
                _ = order.initialize(from: members.indices)
                defer { _ = order.deinitialize() }
                order.sort { members[$0].key < members[$1].key }
                for (position, index) in order.enumerated() {
                    if position > 0 { output.append(UInt8(ascii: ",")) }
                    JSON.newline(&output, pretty: pretty, indent: indent + 1)
                    JSON.writeString(members[index].key, to: &output)
                    output.append(contentsOf: (pretty ? ": " : ":").utf8)
                    members[index].value.write(to: &output, pretty: pretty, indent: indent + 1)
                }
            }
            JSON.newline(&output, pretty: pretty, indent: indent)
            output.append(UInt8(ascii: "}"))
        }
    }

    private static func newline(_ output: inout [UInt8], pretty: Bool, indent: Int) {
        guard pretty else { return }
        output.append(UInt8(ascii: "\n"))
        output.append(contentsOf: repeatElement(UInt8(ascii: " "), count: indent * 2))
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)

    static func writeString(_ string: String, to output: inout [UInt8]) {
        var string = string
        // Native strings are contiguous already: this copies only a bridged one.
        string.makeContiguousUTF8()
        output.append(UInt8(ascii: "\""))
        // Over the string's own bytes, the runs between escapes copied whole: most strings need
        // no escape, and a stored subscription (JSON in a string) has quotes all along.
        string.utf8.withContiguousStorageIfAvailable { bytes in
            var runStart = 0
            for index in bytes.indices {
                let byte = bytes[index]
                guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
                output.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<index]))
                writeEscape(byte, to: &output)
                runStart = index + 1
            }
            output.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart...]))
        }
        output.append(UInt8(ascii: "\""))
    }

    private static func writeEscape(_ byte: UInt8, to output: inout [UInt8]) {
        switch byte {
        case UInt8(ascii: "\""): output.append(contentsOf: "\\\"".utf8)
        case UInt8(ascii: "\\"): output.append(contentsOf: "\\\\".utf8)
        case 0x0A: output.append(contentsOf: "\\n".utf8)
        case 0x0D: output.append(contentsOf: "\\r".utf8)
        case 0x09: output.append(contentsOf: "\\t".utf8)
        default:
            output.append(contentsOf: "\\u00".utf8)
            output.append(hexDigits[Int(byte >> 4)])
            output.append(hexDigits[Int(byte & 0xF)])
        }
    }
}
