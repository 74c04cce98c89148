/// The export stream of `lanchat export` / `lanchat import` (Protocol.md §4): a header, then
/// length-prefixed records, then an end frame with the record count, so truncation is detected;
/// in format version 2, then the chunks of the large writes among those records (§3.7), framed
/// and ended alike.
///
///     stream = magic(16) *(len:u32be record) 00000000 count:u64be
///              [*(len:u32be chunk) 00000000 count:u64be]     ; version 2 only
///
/// Why a second version rather than chunks mixed into the first: a reader of version 1 compares
/// the whole header, so it refuses a stream of version 2 whole, at its first bytes, instead of
/// importing large writes whose content it would never find in it. A writer writes version 1
/// whenever there are no chunks to carry, so that older nodes still read what it exports.
public enum ExportStream {
    /// "lanchat-export", a zero byte, format version 1.
    public static let magic: [UInt8] = Array("lanchat-export".utf8) + [0, 1]
    /// The header of format version 2: records, then the chunks of large writes.
    public static let magicWithChunks: [UInt8] = Array("lanchat-export".utf8) + [0, 2]
    /// The versions this reader takes.
    public static let versions: ClosedRange<UInt8> = 1...2

    /// Why a stream was refused as a whole (a bad record inside a well-formed stream is reported
    /// per record instead).
    public enum StreamError: Error, Equatable, Sendable, CustomStringConvertible {
        /// The input does not start with the export header.
        case badMagic
        /// An export header of a format version this reader does not know.
        case unsupportedVersion(UInt8)
        /// The input ended before the end frame.
        case truncated(afterRecords: Int)
        /// The input ended before the end frame of the chunks (version 2).
        case truncatedChunks(afterChunks: Int)
        /// A length field above the record size limit (or, among chunks, the largest chunk size).
        case frameTooLarge(index: Int, length: Int)
        /// The end frame's count differs from the number of records (or chunks) read.
        case countMismatch(declared: UInt64, found: Int)
        /// Bytes after the end frame.
        case trailingBytes

        public var description: String {
            switch self {
            case .badMagic: return "not a lanchat export stream (bad header)"
            case let .unsupportedVersion(v):
                return "export stream of format version \(v); this lanchat reads versions \(versions.lowerBound) to \(versions.upperBound)"
            case let .truncated(n): return "export stream truncated after \(n) records (no end frame)"
            case let .truncatedChunks(n): return "export stream truncated after \(n) chunks of large writes (no end frame)"
            case let .frameTooLarge(i, l): return "frame #\(i + 1) declares \(l) bytes, above the limit of \(RecordLimits.maxRecordBytes)"
            case let .countMismatch(d, f): return "export stream declares \(d) frames but holds \(f)"
            case .trailingBytes: return "unexpected bytes after the end of the export stream"
            }
        }
    }

    /// The largest frame, of either section: a record's limit, which is also the largest chunk
    /// size (§3.5).
    static let maxFrame = RecordLimits.maxRecordBytes

    /// Writes the header: version 2 when chunks follow the records.
    public static func header(withChunks: Bool = false) -> [UInt8] { withChunks ? magicWithChunks : magic }

    /// One record frame, or one chunk frame.
    public static func frame(_ record: [UInt8]) -> [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity(record.count + 4)
        appendBigEndian(UInt64(record.count), bytes: 4, &out)
        out += record
        return out
    }

    /// The end frame for `count` records (or chunks).
    public static func trailer(count: Int) -> [UInt8] {
        var out: [UInt8] = [0, 0, 0, 0]
        appendBigEndian(UInt64(count), bytes: 8, &out)
        return out
    }

    /// A whole stream, for tests and small exports: version 1 without chunks (nil), 2 with.
    public static func encode(_ records: [[UInt8]], chunks: [[UInt8]]? = nil) -> [UInt8] {
        var out = header(withChunks: chunks != nil)
        for r in records { out += frame(r) }
        out += trailer(count: records.count)
        guard let chunks else { return out }
        for c in chunks { out += frame(c) }
        return out + trailer(count: chunks.count)
    }

    /// Splits a complete stream into its record byte strings, checking only the framing: each
    /// record is decoded and verified by the caller, so one bad record does not spoil the rest.
    public static func frames(_ bytes: [UInt8]) throws(StreamError) -> [ArraySlice<UInt8>] {
        try sections(bytes).records
    }

    /// Splits a complete stream into its records and its chunks (nil in version 1).
    public static func sections(_ bytes: [UInt8]) throws(StreamError) -> (records: [ArraySlice<UInt8>], chunks: [ArraySlice<UInt8>]?) {
        var reader = Reader()
        let records = try reader.feed(bytes)
        try reader.finish()
        return (records, reader.version == 2 ? reader.takeChunks() : nil)
    }

    /// Reads a stream piece by piece (as read from a file or a pipe), handing out each record's
    /// bytes as soon as its frame is complete, so a stream of any size is read in memory of the
    /// size of one piece plus one record. It checks the framing as `frames` does, and `finish`
    /// checks the end: a caller that must refuse a damaged stream whole reads it once through
    /// a reader before acting on any record.
    ///
    /// Chunks (version 2) are kept aside as they complete, for `takeChunks`.
    public struct Reader: Sendable {
        /// Bytes read and not yet handed out (less than one frame).
        private var buffer: [UInt8] = []
        private var stage = Stage.header
        /// Records handed out so far.
        public private(set) var count = 0
        /// Chunks read so far, and those not taken yet.
        public private(set) var chunkCount = 0
        private var chunks: [ArraySlice<UInt8>] = []
        /// The stream's format version, once its header is read.
        public private(set) var version: UInt8?

        private enum Stage: Sendable { case header, frames, trailer, chunks, chunkTrailer, done }

        /// The chunks completed since the last call, in order.
        public mutating func takeChunks() -> [ArraySlice<UInt8>] {
            defer { chunks.removeAll() }
            return chunks
        }

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
                    let prefix = magic.count - 1
                    guard buffer.count - offset >= magic.count else {
                        if !buffer.elementsEqual(magic.prefix(min(buffer.count, prefix))) { throw .badMagic }
                        break loop
                    }
                    guard buffer[offset..<offset + prefix].elementsEqual(magic.prefix(prefix)) else { throw .badMagic }
                    let version = buffer[offset + prefix]
                    guard ExportStream.versions.contains(version) else { throw .unsupportedVersion(version) }
                    self.version = version
                    offset += magic.count
                    stage = .frames
                case .frames, .chunks:
                    guard buffer.count - offset >= 4 else { break loop }
                    let length = buffer[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) }
                    if length == 0 { offset += 4; stage = stage == .frames ? .trailer : .chunkTrailer; continue }
                    let index = stage == .frames ? count : chunkCount
                    guard length <= ExportStream.maxFrame else { throw .frameTooLarge(index: index, length: length) }
                    guard buffer.count - offset - 4 >= length else { break loop }
                    let frame = ArraySlice(Array(buffer[offset + 4..<offset + 4 + length]))
                    offset += 4 + length
                    if stage == .frames {
                        records.append(frame)
                        count += 1
                    } else {
                        chunks.append(frame)
                        chunkCount += 1
                    }
                case .trailer, .chunkTrailer:
                    guard buffer.count - offset >= 8 else { break loop }
                    let declared = buffer[offset..<offset + 8].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
                    let found = stage == .trailer ? count : chunkCount
                    guard declared == UInt64(found) else { throw .countMismatch(declared: declared, found: found) }
                    offset += 8
                    stage = stage == .trailer && version == 2 ? .chunks : .done
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
            case .chunks, .chunkTrailer: throw .truncatedChunks(afterChunks: chunkCount)
            }
        }
    }
}
