/// Strict decoder for messages from an untrusted peer.
///
/// The whole message is validated before anything acts on it, so a bad message changes nothing
/// and yields no partial have/need lists. Every length is checked against the bytes that remain
/// before it is used, and the size and range-count limits cap the work one message can cause.
struct NegentropyMessageReader {
    private let bytes: [UInt8]
    private var position = 0
    private var lastTimestamp: UInt64 = 0

    private init(_ bytes: [UInt8]) { self.bytes = bytes }

    /// Checks the version byte and decodes every range, in order.
    static func decode(_ message: [UInt8], maxMessageBytes: Int, maxRanges: Int) throws(NegentropyError) -> [NegentropyRange] {
        guard message.count <= maxMessageBytes else { throw .messageTooLarge(message.count) }
        guard let version = message.first else { throw .truncated }
        guard version == NegentropySession.protocolVersion else { throw .unsupportedVersion(version) }

        var reader = NegentropyMessageReader(message)
        reader.position = 1
        var ranges: [NegentropyRange] = []
        var previous = NegentropyBound.zero
        while reader.position < message.count {
            guard ranges.count < maxRanges else { throw .tooManyRanges }
            let bound = try reader.readBound()
            // Bounds strictly increase. The one exception is a repeated infinity bound: it closes
            // an empty range, and the reference implementation can emit one when a frame fills up
            // right after a range that already ended at infinity.
            guard previous < bound || (previous.isInfinity && bound.isInfinity) else { throw .invalidBoundOrder }
            previous = bound
            ranges.append(NegentropyRange(upperBound: bound, payload: try reader.readPayload()))
        }
        return ranges
    }

    /// Decodes the varint at the start of `bytes`, returning it and how many bytes it used.
    static func varint(_ bytes: [UInt8]) throws(NegentropyError) -> (value: UInt64, length: Int) {
        var reader = NegentropyMessageReader(bytes)
        let value = try reader.readVarint()
        return (value, reader.position)
    }

    private var remaining: Int { bytes.count - position }

    private mutating func readByte() throws(NegentropyError) -> UInt8 {
        guard position < bytes.count else { throw .truncated }
        defer { position += 1 }
        return bytes[position]
    }

    mutating func readVarint() throws(NegentropyError) -> UInt64 {
        var value: UInt64 = 0
        var first = true
        while true {
            let byte = try readByte()
            if first, byte == 0x80 { throw .nonMinimalVarint }
            first = false
            guard value >> 57 == 0 else { throw .varintOverflow }
            value = value << 7 | UInt64(byte & 0x7F)
            if byte & 0x80 == 0 { return value }
        }
    }

    /// Timestamps are deltas from the previous bound plus one; 0 means infinity. A delta that
    /// lands exactly on `UInt64.max` is also infinity, since no item can have that timestamp.
    private mutating func readBound() throws(NegentropyError) -> NegentropyBound {
        let encoded = try readVarint()
        var timestamp = UInt64.max
        if encoded != 0 {
            let (sum, overflow) = lastTimestamp.addingReportingOverflow(encoded - 1)
            guard !overflow else { throw .timestampOverflow }
            timestamp = sum
        }
        lastTimestamp = timestamp

        let length = try readVarint()
        guard length <= UInt64(NegentropyItem.idLength) else { throw .idPrefixTooLong(length) }
        let prefixLength = Int(length)
        guard prefixLength <= remaining else { throw .truncated }
        let prefix = bytes[position..<position + prefixLength]
        position += prefixLength

        if timestamp == .max { return .infinity }
        return NegentropyBound(timestamp: timestamp, id: NegentropyPackedID(bytes: prefix), prefixLength: prefixLength)
    }

    private mutating func readPayload() throws(NegentropyError) -> NegentropyRange.Payload {
        let rawMode = try readVarint()
        guard let mode = NegentropyMode(rawValue: rawMode) else { throw .invalidMode(rawMode) }
        switch mode {
        case .skip:
            return .skip
        case .fingerprint:
            guard remaining >= NegentropyFingerprint.length else { throw .truncated }
            defer { position += NegentropyFingerprint.length }
            return .fingerprint(offset: position)
        case .idList:
            let count = try readVarint()
            guard count <= UInt64(remaining / NegentropyItem.idLength) else { throw .idListCountExceedsMessage(count) }
            let offset = position
            position += Int(count) * NegentropyItem.idLength
            return .idList(offset: offset, count: Int(count))
        }
    }
}
