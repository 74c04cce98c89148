import Crypto

/// The messages of a session after its handshake (Protocol.md §8). Each travels as one frame
/// of the session's decrypted byte stream.
///
///     frame   = length:u32be message          ; 1 <= length <= 2 MiB
///     message = [1, author, instance, count, fingerprint]   ; hello: first frame each way
///             / [2, negentropy]                             ; reconcile (initiator)
///             / [3, negentropy]                             ; reconcile reply (responder)
///             / [4, [* record]]                             ; records
///             / [5, [* id]]                                 ; want: ids the sender lacks
///             / [6, [* hash]]                               ; want chunks (at most 64)
///             / [7, hash, bytes]                            ; one chunk
///             / [8, [* hash]]                               ; chunks the sender does not hold
///             / [9, [* live]]                               ; live values (at most 256)
public enum SessionMessage: Equatable, Sendable {
    case hello(author: PublicKey, instance: [UInt8], recordCount: UInt64, fingerprint: [UInt8])
    case reconcile([UInt8])
    case reconcileReply([UInt8])
    case records([[UInt8]])
    case want([Digest32])
    case wantChunks([Digest32])
    case chunk(Digest32, [UInt8])
    case noChunks([Digest32])
    /// Signed live values (`LiveValue`), each still to be decoded and verified.
    case live([[UInt8]])

    /// Most live values in one `live` message.
    public static let maxLiveValues = 256

    /// Most chunk hashes in one `wantChunks` or `noChunks`.
    public static let maxChunkHashes = 64
    /// Largest chunk carried.
    public static let maxChunkBytes = 1 << 20

    /// Largest frame either side sends or accepts.
    public static let maxFrameBytes = 2 << 20
    /// Most ids in one `want`.
    public static let maxWantIDs = 8192
    /// Records are batched up to this many bytes per `records` message (a single larger record
    /// travels alone).
    public static let recordBatchBytes = 512 << 10

    public func encoded() -> [UInt8] {
        let item: CBOR
        switch self {
        case let .hello(author, instance, count, fingerprint):
            item = .array([.unsigned(1), .bytes(author.bytes), .bytes(instance), .unsigned(count), .bytes(fingerprint)])
        case let .reconcile(message): item = .array([.unsigned(2), .bytes(message)])
        case let .reconcileReply(message): item = .array([.unsigned(3), .bytes(message)])
        case let .records(records): item = .array([.unsigned(4), .array(records.map { .bytes($0) })])
        case let .want(ids): item = .array([.unsigned(5), .array(ids.map { .bytes($0.bytes) })])
        case let .wantChunks(hashes): item = .array([.unsigned(6), .array(hashes.map { .bytes($0.bytes) })])
        case let .chunk(hash, bytes): item = .array([.unsigned(7), .bytes(hash.bytes), .bytes(bytes)])
        case let .noChunks(hashes): item = .array([.unsigned(8), .array(hashes.map { .bytes($0.bytes) })])
        case let .live(values): item = .array([.unsigned(9), .array(values.map { .bytes($0) })])
        }
        return item.encoded()
    }

    /// A frame: the length prefix and the message.
    public func framed() -> [UInt8] {
        let body = encoded()
        var out = [UInt8]()
        out.reserveCapacity(body.count + 4)
        appendBigEndian(UInt64(body.count), bytes: 4, &out)
        return out + body
    }

    /// The frame of `chunk(hash, bytes)` up to where `bytes` begins: its length prefix, and the
    /// encoding's head, so a sender can append the chunk bytes after it without first encoding
    /// them into an intermediate array. `chunkFramePrefix(h, n) + bytes == chunk(h, bytes).framed()`.
    public static func chunkFramePrefix(_ hash: Digest32, byteCount: Int) -> [UInt8] {
        var head = [UInt8]()
        CBOR.writeHead(4, 3, &head)
        CBOR.unsigned(7).encode(into: &head)
        CBOR.bytes(hash.bytes).encode(into: &head)
        CBOR.writeHead(2, UInt64(byteCount), &head)
        var out = [UInt8]()
        out.reserveCapacity(head.count + 4)
        appendBigEndian(UInt64(head.count + byteCount), bytes: 4, &out)
        return out + head
    }

    /// Why a peer's message was refused; the session is closed and the peer penalised.
    public enum DecodeError: Error, Equatable, Sendable, CustomStringConvertible {
        case malformed(String)
        case frameTooLarge(Int)

        public var description: String {
            switch self {
            case let .malformed(why): return "malformed session message: \(why)"
            case let .frameTooLarge(n): return "session frame of \(n) bytes exceeds \(SessionMessage.maxFrameBytes)"
            }
        }
    }

    private static func digests(_ item: CBOR, max: Int) throws(DecodeError) -> [Digest32] {
        guard case let .array(items) = item, items.count <= max else { throw .malformed("a hash list longer than \(max)") }
        var out = [Digest32]()
        out.reserveCapacity(items.count)
        for item in items {
            guard case let .bytes(id) = item, let digest = try? Digest32(bytes: id) else { throw .malformed("a hash or id is not 32 bytes") }
            out.append(digest)
        }
        return out
    }

    public static func decode(_ bytes: [UInt8]) throws(DecodeError) -> SessionMessage {
        try decode(bytes[...])
    }

    /// Decodes a message lying in a larger buffer (the session's receive buffer): a chunk's bytes
    /// are copied once, out of the buffer, and nothing else is.
    public static func decode(_ bytes: ArraySlice<UInt8>) throws(DecodeError) -> SessionMessage {
        let item: CBOR
        do { item = try CBORDecoder.decode(bytes, limits: CBORLimits(maxDepth: 3, maxItems: 20_000)) } catch {
            throw .malformed("\(error)")
        }
        guard case let .array(fields) = item, case let .unsigned(type)? = fields.first else { throw .malformed("not a typed array") }
        switch (type, fields.count) {
        case (1, 5):
            guard case let .bytes(author) = fields[1], let key = try? PublicKey(bytes: author),
                  case let .bytes(instance) = fields[2], instance.count == Beacon.instanceByteCount,
                  case let .unsigned(count) = fields[3], case let .bytes(fingerprint) = fields[4], fingerprint.count == 16
            else { throw .malformed("bad hello") }
            return .hello(author: key, instance: instance, recordCount: count, fingerprint: fingerprint)
        case (2, 2), (3, 2):
            guard case let .bytes(message) = fields[1] else { throw .malformed("bad reconcile message") }
            return type == 2 ? .reconcile(message) : .reconcileReply(message)
        case (4, 2):
            guard case let .array(items) = fields[1] else { throw .malformed("bad records") }
            var records = [[UInt8]]()
            for item in items {
                guard case let .bytes(record) = item else { throw .malformed("a record is not a byte string") }
                records.append(record)
            }
            return .records(records)
        case (5, 2):
            return .want(try digests(fields[1], max: maxWantIDs))
        case (6, 2):
            return .wantChunks(try digests(fields[1], max: maxChunkHashes))
        case (8, 2):
            return .noChunks(try digests(fields[1], max: maxChunkHashes))
        case (9, 2):
            guard case let .array(items) = fields[1], items.count <= maxLiveValues else { throw .malformed("bad live values") }
            var values = [[UInt8]]()
            for item in items {
                guard case let .bytes(value) = item, value.count <= LiveValue.maxEncodedBytes else {
                    throw .malformed("a live value is not a byte string of at most \(LiveValue.maxEncodedBytes) bytes")
                }
                values.append(value)
            }
            return .live(values)
        case (7, 3):
            guard case let .bytes(hash) = fields[1], let digest = try? Digest32(bytes: hash),
                  case let .bytes(bytes) = fields[2], !bytes.isEmpty, bytes.count <= maxChunkBytes
            else { throw .malformed("bad chunk") }
            return .chunk(digest, bytes)
        default:
            throw .malformed("unknown message type \(type) with \(fields.count) fields")
        }
    }
}

/// Cuts a byte stream into length-prefixed frames (big-endian length of `prefixBytes` bytes),
/// holding at most one partial frame: a declared length outside the bounds is refused at once,
/// before anything is buffered for it. Sessions use it twice: 4-byte frames of session messages,
/// and 2-byte frames of Noise messages on TCP.
///
/// `append` and `next` hand out frames as slices of the buffer, so a 64 KiB chunk is not copied
/// on its way from the socket to the decoder; `push` is the simple form for callers that want
/// arrays. A slice from `next` must be dropped before the next `append`, or the append copies the
/// whole buffer (copy-on-write) rather than compacting it in place.
public struct FrameReader: Sendable {
    /// Bytes `start..<end` are received and not yet handed out. Past `end` the buffer keeps
    /// bytes already used, as room for the next ones: growing an array means initializing the
    /// new room, and a decryption written into fresh room every time zeroed each byte first.
    private var buffer: [UInt8] = []
    /// Where the first unread byte is.
    private var start = 0
    /// Where the unread bytes end.
    private var end = 0
    public let maxFrameBytes: Int
    public let minFrameBytes: Int
    public let prefixBytes: Int

    public init(maxFrameBytes: Int = SessionMessage.maxFrameBytes, minFrameBytes: Int = 1, prefixBytes: Int = 4) {
        self.maxFrameBytes = maxFrameBytes
        self.minFrameBytes = minFrameBytes
        self.prefixBytes = prefixBytes
    }

    /// Adds received bytes and returns every complete frame body.
    public mutating func push(_ bytes: [UInt8]) throws(SessionMessage.DecodeError) -> [[UInt8]] {
        append(bytes)
        var frames = [[UInt8]]()
        while let frame = try next() { frames.append(Array(frame)) }
        return frames
    }

    /// Bytes received but not yet handed out as frames.
    public var bufferedCount: Int { end - start }

    /// Adds received bytes (frames are taken with `next`).
    public mutating func append(_ bytes: some Collection<UInt8>) {
        _ = append(count: bytes.count) { room in
            room.copyBytes(from: bytes)
            return true
        }
    }

    /// `append` for bytes in a buffer (a connection's read buffer): one copy, with no generic
    /// code between the caller's module and this one.
    public mutating func append(_ bytes: UnsafeRawBufferPointer) {
        _ = append(count: bytes.count) { room in
            room.copyMemory(from: bytes)
            return true
        }
    }

    /// Adds `count` bytes written by `fill` straight into the buffer (a decryption's output).
    /// If `fill` returns false, nothing is added.
    public mutating func append(count: Int, _ fill: (UnsafeMutableRawBufferPointer) -> Bool) -> Bool {
        compact()
        if buffer.count < end + count {
            // Zeroed in one call rather than element by element (which unoptimized builds do
            // for a generic sequence, and which cost more than the rest of a session's reading).
            let extra = [UInt8](unsafeUninitializedCapacity: end + count - buffer.count) { room, initialized in
                UnsafeMutableRawBufferPointer(room).initializeMemory(as: UInt8.self, repeating: 0)
                initialized = room.count
            }
            buffer += extra
        }
        let filled = buffer.withUnsafeMutableBytes { fill(UnsafeMutableRawBufferPointer(rebasing: $0[end..<end + count])) }
        if filled { end += count }
        return filled
    }

    /// The next complete frame's body, or nil until more bytes arrive. Throws, before anything is
    /// buffered for it, when the next frame declares a length outside the bounds.
    public mutating func next() throws(SessionMessage.DecodeError) -> ArraySlice<UInt8>? {
        guard end - start >= prefixBytes else { return nil }
        var length = 0
        for index in start..<start + prefixBytes { length = length << 8 | Int(buffer[index]) }
        guard length >= minFrameBytes else { throw .malformed("a frame of \(length) bytes, below the minimum of \(minFrameBytes)") }
        guard length <= maxFrameBytes else { throw .frameTooLarge(length) }
        guard end - start - prefixBytes >= length else { return nil }
        let body = buffer[start + prefixBytes..<start + prefixBytes + length]
        start += prefixBytes + length
        return body
    }

    /// Drops the bytes already handed out: all of them when nothing is left (no copy), otherwise
    /// only once they are many, so a stream of small frames is not moved down byte by byte.
    private mutating func compact() {
        guard start > 0 else { return }
        if start == end {
            start = 0
            end = 0
        } else if start > 1 << 16 {
            let (from, count) = (start, end - start)
            buffer.withUnsafeMutableBytes { raw in
                raw.baseAddress!.copyMemory(from: raw.baseAddress! + from, byteCount: count)
            }
            start = 0
            end = count
        }
    }
}
