/// Bounds on what a decoder accepts, so hostile input cannot make it allocate or recurse
/// without limit.
public struct CBORLimits: Sendable {
    /// Deepest nesting of arrays and maps.
    public var maxDepth: Int
    /// Most items (of any kind) in one input.
    public var maxItems: Int

    public init(maxDepth: Int = 48, maxItems: Int = 200_000) {
        self.maxDepth = maxDepth
        self.maxItems = maxItems
    }
}

/// Why bytes were refused as deterministic CBOR. Each case names one rule of Protocol.md §2.
public enum CBORError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The input ended inside an item.
    case truncated(offset: Int)
    /// Bytes remained after the top-level item.
    case trailingBytes(offset: Int)
    /// An argument was not in its shortest form, a float not in its shortest exact form, or map
    /// keys were out of order.
    case nonCanonical(offset: Int, reason: String)
    /// A construct outside lanchat's subset: indefinite lengths, tags, `undefined`, NaN, infinity.
    case unsupported(offset: Int, reason: String)
    /// A text string was not valid UTF-8.
    case invalidUTF8(offset: Int)
    /// A map had the same key twice.
    case duplicateKey(offset: Int)
    /// Nesting or item count beyond `CBORLimits`.
    case limitExceeded(offset: Int, reason: String)

    public var description: String {
        switch self {
        case let .truncated(o): return "CBOR truncated at byte \(o)"
        case let .trailingBytes(o): return "unexpected bytes after the end of the CBOR item at byte \(o)"
        case let .nonCanonical(o, r): return "non-canonical CBOR at byte \(o): \(r)"
        case let .unsupported(o, r): return "unsupported CBOR at byte \(o): \(r)"
        case let .invalidUTF8(o): return "invalid UTF-8 in CBOR text at byte \(o)"
        case let .duplicateKey(o): return "duplicate CBOR map key at byte \(o)"
        case let .limitExceeded(o, r): return "CBOR limit exceeded at byte \(o): \(r)"
        }
    }
}

/// A strict decoder for deterministic CBOR: it accepts exactly the encodings `CBOR.encoded()`
/// produces, so decode-then-encode always gives the input bytes back.
public struct CBORDecoder {
    private let bytes: ArraySlice<UInt8>
    /// `bytes.startIndex`: offsets (and those in errors) count from the start of the input.
    private let base: Int
    private var offset = 0
    private var items = 0
    private let limits: CBORLimits

    /// Decodes exactly one item that must span all of `bytes`.
    public static func decode(_ bytes: [UInt8], limits: CBORLimits = CBORLimits()) throws(CBORError) -> CBOR {
        try decode(bytes[...], limits: limits)
    }

    /// Decodes exactly one item that must span all of `bytes`, a slice of a larger buffer (a
    /// session frame in the receive buffer), without copying it first.
    public static func decode(_ bytes: ArraySlice<UInt8>, limits: CBORLimits = CBORLimits()) throws(CBORError) -> CBOR {
        var decoder = CBORDecoder(bytes: bytes, limits: limits)
        let item = try decoder.item(depth: 0)
        guard decoder.offset == bytes.count else { throw .trailingBytes(offset: decoder.offset) }
        return item
    }

    /// Decodes the one item that starts `bytes` and returns it with its length in bytes; what
    /// follows it is left for the caller. For long sequences of items read one at a time (a
    /// large write's pairs, Protocol.md §3.7), so that only one item is ever built at once.
    public static func decodePrefix(_ bytes: ArraySlice<UInt8>, limits: CBORLimits) throws(CBORError) -> (item: CBOR, length: Int) {
        var decoder = CBORDecoder(bytes: bytes, limits: limits)
        let item = try decoder.item(depth: 0)
        return (item, decoder.offset)
    }

    /// Reads the head of a definite-length array that starts `bytes`, in its shortest form, and
    /// returns its count and the head's length, without reading the elements.
    public static func arrayHead(_ bytes: ArraySlice<UInt8>) throws(CBORError) -> (count: UInt64, length: Int) {
        var decoder = CBORDecoder(bytes: bytes, limits: CBORLimits())
        let head = try decoder.byte()
        guard head >> 5 == 4 else { throw .unsupported(offset: 0, reason: "not an array") }
        let count = try decoder.argument(head & 0x1F, at: 0)
        return (count, decoder.offset)
    }

    private init(bytes: ArraySlice<UInt8>, limits: CBORLimits) {
        self.bytes = bytes
        base = bytes.startIndex
        self.limits = limits
    }

    private mutating func byte() throws(CBORError) -> UInt8 {
        guard offset < bytes.count else { throw .truncated(offset: offset) }
        defer { offset += 1 }
        return bytes[base + offset]
    }

    private mutating func take(_ n: UInt64) throws(CBORError) -> ArraySlice<UInt8> {
        guard n <= UInt64(bytes.count - offset) else { throw .truncated(offset: offset) }
        let start = offset
        offset += Int(n)
        return bytes[base + start..<base + offset]
    }

    private mutating func bigEndian(_ n: Int) throws(CBORError) -> UInt64 {
        var value: UInt64 = 0
        for b in try take(UInt64(n)) { value = value << 8 | UInt64(b) }
        return value
    }

    /// Reads the argument of a head whose low five bits are `info`, insisting on the shortest form.
    private mutating func argument(_ info: UInt8, at start: Int) throws(CBORError) -> UInt64 {
        switch info {
        case 0..<24: return UInt64(info)
        case 24...27:
            let width = 1 << Int(info - 24)
            let v = try bigEndian(width)
            guard CBORDecoder.isShortest(v, width: width) else {
                throw .nonCanonical(offset: start, reason: "argument \(v) not in shortest form")
            }
            return v
        case 31: throw .unsupported(offset: start, reason: "indefinite length")
        default: throw .unsupported(offset: start, reason: "reserved additional information \(info)")
        }
    }

    /// Whether `value`, read from an argument of `width` bytes after the head (1, 2, 4 or 8),
    /// could not have been written narrower: canonical CBOR holds every argument in its
    /// shortest form, so one record has one encoding and one id.
    static func isShortest(_ value: UInt64, width: Int) -> Bool {
        switch width {
        case 1: value >= 24
        case 2: value > 0xFF
        case 4: value > 0xFFFF
        default: value > 0xFFFF_FFFF
        }
    }

    /// The text of a text string's bytes, or nil when they are not UTF-8. ASCII (keys, push ids,
    /// paths: most text of a record) is taken as it is; other text is checked by the standard
    /// library, whose generic validating initializer looks up type metadata on each call, a
    /// visible share of decoding the records of a cold sync.
    static func text(_ raw: ArraySlice<UInt8>) -> String? {
        raw.withUnsafeBufferPointer(text)
    }

    static func text(_ buffer: UnsafeBufferPointer<UInt8>) -> String? {
        isASCII(buffer) ? String(decoding: buffer, as: UTF8.self) : String(validating: buffer, as: UTF8.self)
    }

    /// Whether `text` would accept the bytes, making a string only when they are not ASCII.
    static func isText(_ buffer: UnsafeBufferPointer<UInt8>) -> Bool {
        isASCII(buffer) || String(validating: buffer, as: UTF8.self) != nil
    }

    private static func isASCII(_ buffer: UnsafeBufferPointer<UInt8>) -> Bool {
        var high: UInt8 = 0
        for byte in buffer { high |= byte }
        return high < 0x80
    }

    private mutating func item(depth: Int) throws(CBORError) -> CBOR {
        let start = offset
        items += 1
        guard items <= limits.maxItems else { throw .limitExceeded(offset: start, reason: "more than \(limits.maxItems) items") }
        let head = try byte()
        let major = head >> 5
        let info = head & 0x1F
        switch major {
        case 0: return .unsigned(try argument(info, at: start))
        case 1: return .negative(try argument(info, at: start))
        case 2: return .bytes(Array(try take(try argument(info, at: start))))
        case 3:
            let raw = try take(try argument(info, at: start))
            guard let text = CBORDecoder.text(raw) else { throw .invalidUTF8(offset: start) }
            return .text(text)
        case 4, 5:
            guard depth < limits.maxDepth else { throw .limitExceeded(offset: start, reason: "nesting deeper than \(limits.maxDepth)") }
            let count = try argument(info, at: start)
            // Every item takes at least one byte, so a count beyond the remaining input is a lie.
            let minimumBytes = major == 4 ? count : count.multipliedReportingOverflow(by: 2).partialValue
            guard count <= UInt64(bytes.count - offset), minimumBytes <= UInt64(bytes.count - offset) else {
                throw .truncated(offset: start)
            }
            if major == 4 {
                var result = [CBOR]()
                result.reserveCapacity(Int(count))
                for _ in 0..<count { result.append(try item(depth: depth + 1)) }
                return .array(result)
            }
            var pairs = [CBORPair]()
            pairs.reserveCapacity(Int(count))
            var previousKey: ArraySlice<UInt8>?
            for _ in 0..<count {
                let keyStart = offset
                let key = try item(depth: depth + 1)
                let keyBytes = bytes[base + keyStart..<base + offset]
                if let previous = previousKey {
                    if previous == keyBytes { throw .duplicateKey(offset: keyStart) }
                    guard previous.lexicographicallyPrecedes(keyBytes) else {
                        throw .nonCanonical(offset: keyStart, reason: "map keys not in bytewise order")
                    }
                }
                previousKey = keyBytes
                pairs.append(CBORPair(key, try item(depth: depth + 1)))
            }
            return .map(pairs)
        case 6: throw .unsupported(offset: start, reason: "tags")
        default:
            switch info {
            case 20: return .bool(false)
            case 21: return .bool(true)
            case 22: return .null
            case 25: return try float(Double(Float16(bitPattern: UInt16(try bigEndian(2)))), at: start, width: 2)
            case 26: return try float(Double(Float(bitPattern: UInt32(try bigEndian(4)))), at: start, width: 4)
            case 27: return try float(Double(bitPattern: try bigEndian(8)), at: start, width: 8)
            default: throw .unsupported(offset: start, reason: "simple value \(info)")
            }
        }
    }

    /// Accepts a float only when finite and when no shorter width would hold it exactly.
    private func float(_ d: Double, at start: Int, width: Int) throws(CBORError) -> CBOR {
        guard d.isFinite else { throw .unsupported(offset: start, reason: "NaN or infinity") }
        var shortest = [UInt8]()
        CBOR.writeFloat(d, &shortest)
        guard shortest.count == width + 1 else {
            throw .nonCanonical(offset: start, reason: "float not in its shortest exact width")
        }
        return .float(d)
    }
}
