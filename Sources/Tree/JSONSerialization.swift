// Rendering values as JSON text the way Firebase clients see them: keys in
// Firebase order and array-like objects shown as arrays.

extension JSONValue {
    /// Compact JSON (no spaces), deterministic for a given value, so it can be
    /// compared, hashed and sent to peers and clients byte for byte.
    public func serialized() -> String {
        var writer = JSONWriter(pretty: false)
        writer.write(self, level: 0)
        return writer.text
    }

    /// The same rendering with 2-space indentation, for humans (CLI output).
    public func serializedPretty() -> String {
        var writer = JSONWriter(pretty: true)
        writer.write(self, level: 0)
        return writer.text
    }

    /// The number as JSON text: integers below 2^53 without a fraction
    /// ("-0" becomes "0"), others in shortest round-trip form; a non-finite
    /// number (which JSON cannot express) becomes `null`.
    public static func formatNumber(_ number: Double) -> String {
        guard number.isFinite else { return "null" }
        if number.rounded(.towardZero) == number, number.magnitude < 9_007_199_254_740_992 {
            return String(Int64(number))
        }
        return number.description
    }

    /// The array length an object would be rendered with, or nil when it must
    /// be rendered as an object: every key must be a canonical non-negative
    /// integer and the largest one smaller than twice the number of keys.
    public static func arrayLength(of members: [String: JSONValue]) -> Int? {
        guard !members.isEmpty else { return nil }
        var largest = -1
        for key in members.keys {
            guard let index = canonicalIndex(key) else { return nil }
            largest = max(largest, index)
        }
        return largest < 2 * members.count ? largest + 1 : nil
    }

    /// "0", "7", "12" -> their value; "01", "-1", "+1", "" or huge -> nil.
    static func canonicalIndex(_ key: String) -> Int? {
        let utf8 = key.utf8
        guard let first = utf8.first, utf8.count <= 15 else { return nil }
        if first == UInt8(ascii: "0") { return utf8.count == 1 ? 0 : nil }
        var value = 0
        for byte in utf8 {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            value = value * 10 + Int(byte - UInt8(ascii: "0"))
        }
        return value
    }
}

/// Accumulates UTF-8 output for `serialized()` / `serializedPretty()`.
private struct JSONWriter {
    let pretty: Bool
    var bytes: [UInt8] = []

    init(pretty: Bool) { self.pretty = pretty }

    var text: String { String(decoding: bytes, as: UTF8.self) }

    mutating func append(_ text: String) { bytes.append(contentsOf: text.utf8) }

    mutating func newline(level: Int) {
        guard pretty else { return }
        bytes.append(0x0A)
        bytes.append(contentsOf: repeatElement(0x20, count: 2 * level))
    }

    mutating func write(_ value: JSONValue, level: Int) {
        switch value {
        case .null: append("null")
        case .bool(let flag): append(flag ? "true" : "false")
        case .number(let number): append(JSONValue.formatNumber(number))
        case .string(let text): writeString(text)
        case .array(let items): writeArray(items, level: level)
        case .object(let members):
            if let length = JSONValue.arrayLength(of: members) {
                var items: [JSONValue] = []
                items.reserveCapacity(length)
                for index in 0..<length { items.append(members[String(index)] ?? .null) }
                writeArray(items, level: level)
            } else {
                writeObject(members, level: level)
            }
        }
    }

    mutating func writeArray(_ items: [JSONValue], level: Int) {
        bytes.append(UInt8(ascii: "["))
        for (position, item) in items.enumerated() {
            if position > 0 { bytes.append(UInt8(ascii: ",")) }
            newline(level: level + 1)
            write(item, level: level + 1)
        }
        if !items.isEmpty { newline(level: level) }
        bytes.append(UInt8(ascii: "]"))
    }

    mutating func writeObject(_ members: [String: JSONValue], level: Int) {
        bytes.append(UInt8(ascii: "{"))
        let keys = FirebaseOrder.sortedKeys(members.keys)
        for (position, key) in keys.enumerated() {
            if position > 0 { bytes.append(UInt8(ascii: ",")) }
            newline(level: level + 1)
            writeString(key)
            bytes.append(UInt8(ascii: ":"))
            if pretty { bytes.append(0x20) }
            write(members[key] ?? .null, level: level + 1)
        }
        if !keys.isEmpty { newline(level: level) }
        bytes.append(UInt8(ascii: "}"))
    }

    /// The string as a JSON string. Runs of bytes that need no escape (nearly all) are copied
    /// whole: byte by byte, writing strings was the largest share of answering a GET.
    mutating func writeString(_ text: String) {
        bytes.append(UInt8(ascii: "\""))
        var text = text
        text.withUTF8 { utf8 in
            var start = 0
            for index in utf8.indices {
                let byte = utf8[index]
                guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[start..<index]))
                writeEscaped(byte)
                start = index + 1
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[start...]))
        }
        bytes.append(UInt8(ascii: "\""))
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)

    /// A byte that JSON text cannot hold as it is: a quote, a backslash or a control character.
    private mutating func writeEscaped(_ byte: UInt8) {
        switch byte {
        case UInt8(ascii: "\""): append("\\\"")
        case UInt8(ascii: "\\"): append("\\\\")
        case 0x0A: append("\\n")
        case 0x0D: append("\\r")
        case 0x09: append("\\t")
        case 0x08: append("\\b")
        case 0x0C: append("\\f")
        default:
            append("\\u00")
            bytes.append(JSONWriter.hexDigits[Int(byte >> 4)])
            bytes.append(JSONWriter.hexDigits[Int(byte & 0x0F)])
        }
    }
}
