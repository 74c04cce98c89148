/// The export stream of `lanchat export` / `lanchat import` (Protocol.md §4): a header, then
/// length-prefixed records, then an end frame with the record count, so truncation is detected.
///
///     stream = magic(16) *(len:u32be record) 00000000 count:u64be
public enum ExportStream {
    /// "lanchat-export", a zero byte, format version 1.
    public static let magic: [UInt8] = Array("lanchat-export".utf8) + [0, 1]

    /// Why a stream was refused as a whole (a bad record inside a well-formed stream is reported
    /// per record instead).
    public enum StreamError: Error, Equatable, Sendable, CustomStringConvertible {
        /// The input does not start with the export header.
        case badMagic
        /// The input ended before the end frame.
        case truncated(afterRecords: Int)
        /// A length field above the record size limit.
        case frameTooLarge(index: Int, length: Int)
        /// The end frame's count differs from the number of records read.
        case countMismatch(declared: UInt64, found: Int)
        /// Bytes after the end frame.
        case trailingBytes

        public var description: String {
            switch self {
            case .badMagic: return "not a lanchat export stream (bad header)"
            case let .truncated(n): return "export stream truncated after \(n) records (no end frame)"
            case let .frameTooLarge(i, l): return "record #\(i + 1) declares \(l) bytes, above the limit of \(RecordLimits.maxRecordBytes)"
            case let .countMismatch(d, f): return "export stream declares \(d) records but holds \(f)"
            case .trailingBytes: return "unexpected bytes after the end of the export stream"
            }
        }
    }

    /// Writes the header.
    public static func header() -> [UInt8] { magic }

    /// One record frame.
    public static func frame(_ record: [UInt8]) -> [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity(record.count + 4)
        appendBigEndian(UInt64(record.count), bytes: 4, &out)
        out += record
        return out
    }

    /// The end frame for `count` records.
    public static func trailer(count: Int) -> [UInt8] {
        var out: [UInt8] = [0, 0, 0, 0]
        appendBigEndian(UInt64(count), bytes: 8, &out)
        return out
    }

    /// A whole stream, for tests and small exports.
    public static func encode(_ records: [[UInt8]]) -> [UInt8] {
        var out = header()
        for r in records { out += frame(r) }
        return out + trailer(count: records.count)
    }

    /// Splits a complete stream into its record byte strings, checking only the framing: each
    /// record is decoded and verified by the caller, so one bad record does not spoil the rest.
    public static func frames(_ bytes: [UInt8]) throws(StreamError) -> [ArraySlice<UInt8>] {
        guard bytes.count >= magic.count, Array(bytes[0..<magic.count]) == magic else { throw .badMagic }
        var offset = magic.count
        var records = [ArraySlice<UInt8>]()
        while true {
            guard bytes.count - offset >= 4 else { throw .truncated(afterRecords: records.count) }
            let length = bytes[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) }
            offset += 4
            if length == 0 { break }
            guard length <= RecordLimits.maxRecordBytes else { throw .frameTooLarge(index: records.count, length: length) }
            guard bytes.count - offset >= length else { throw .truncated(afterRecords: records.count) }
            records.append(bytes[offset..<offset + length])
            offset += length
        }
        guard bytes.count - offset >= 8 else { throw .truncated(afterRecords: records.count) }
        let count = bytes[offset..<offset + 8].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        offset += 8
        guard count == UInt64(records.count) else { throw .countMismatch(declared: count, found: records.count) }
        guard offset == bytes.count else { throw .trailingBytes }
        return records
    }

    /// Reads a stream piece by piece (as read from a file or a pipe), handing out each record's
    /// bytes as soon as its frame is complete, so a stream of any size is read in memory of the
    /// size of one piece plus one record. It checks the framing as `frames` does, and `finish`
    /// checks the end: a caller that must refuse a damaged stream whole reads it once through
    /// a reader before acting on any record.
    public struct Reader: Sendable {
        /// Bytes read and not yet handed out (less than one frame).
        private var buffer: [UInt8] = []
        private var stage = Stage.header
        /// Records handed out so far.
        public private(set) var count = 0

        private enum Stage: Sendable { case header, frames, trailer, done }

        public init() {}

        /// Takes the next piece of the stream; returns the records it completes, in order.
        public mutating func feed(_ piece: some Collection<UInt8>) throws(StreamError) -> [ArraySlice<UInt8>] {
            buffer.append(contentsOf: piece)
            var offset = 0
            var records = [ArraySlice<UInt8>]()
            defer {
                // Keep only what was not consumed. The records handed out are copies of their
                // own (slices of an array that is about to change would not be).
                if offset > 0 { buffer.removeFirst(offset) }
            }
            loop: while true {
                switch stage {
                case .header:
                    guard buffer.count - offset >= magic.count else {
                        if !buffer.elementsEqual(magic.prefix(buffer.count)) { throw .badMagic }
                        break loop
                    }
                    guard buffer[offset..<offset + magic.count].elementsEqual(magic) else { throw .badMagic }
                    offset += magic.count
                    stage = .frames
                case .frames:
                    guard buffer.count - offset >= 4 else { break loop }
                    let length = buffer[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) }
                    if length == 0 { offset += 4; stage = .trailer; continue }
                    guard length <= RecordLimits.maxRecordBytes else { throw .frameTooLarge(index: count, length: length) }
                    guard buffer.count - offset - 4 >= length else { break loop }
                    records.append(ArraySlice(Array(buffer[offset + 4..<offset + 4 + length])))
                    offset += 4 + length
                    count += 1
                case .trailer:
                    guard buffer.count - offset >= 8 else { break loop }
                    let declared = buffer[offset..<offset + 8].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
                    guard declared == UInt64(count) else { throw .countMismatch(declared: declared, found: count) }
                    offset += 8
                    stage = .done
                case .done:
                    guard buffer.count == offset else { throw .trailingBytes }
                    break loop
                }
            }
            return records
        }

        /// Checks, once the input has ended, that it ended exactly at the end frame.
        public func finish() throws(StreamError) {
            switch stage {
            case .done: return
            case .header: throw .badMagic
            case .frames, .trailer: throw .truncated(afterRecords: count)
            }
        }
    }
}
