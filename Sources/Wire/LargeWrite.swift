import Crypto
import Tree

/// A large write (record kind 4, Protocol.md §3.7): a write whose pairs are too many or too large
/// for one record. The record names its **content**, the pairs in exactly the CBOR of a kind-1
/// body, by the BLAKE2b-256 of the whole and of every chunk; the chunks travel like a file's
/// (§8.5). The signature covers those hashes, so the content is as authenticated as the record.
///
/// Why a content addressed by chunks rather than bigger records: records are reconciled, pushed
/// and ingested in bounded batches sized for small writes; a 16 MiB update as one record would
/// need every one of those bounds raised. As chunks it reuses the fetch, check and relay of files,
/// and reconciliation sees it as one small record.
public struct LargeWrite: Hashable, Sendable {
    /// BLAKE2b-256 of the whole content.
    public let content: Digest32
    /// The content's length in bytes.
    public let size: UInt64
    /// The size of every chunk but the last.
    public let chunkSize: UInt64
    /// BLAKE2b-256 of every chunk, in order.
    public let chunks: [Digest32]

    public init(content: Digest32, size: UInt64, chunkSize: UInt64, chunks: [Digest32]) {
        self.content = content
        self.size = size
        self.chunkSize = chunkSize
        self.chunks = chunks
    }

    /// Largest content: Firebase's limit for one REST write (256 MB), in MiB.
    public static let maxSize: UInt64 = 256 << 20
    /// Most pairs in one content. Firebase has no count of its own; this bounds what a receiver
    /// keeps per pair while it checks a content (its path) to well above the 100,000 children of
    /// a 16 MB update.
    public static let maxPairs = 262_144
    /// Nesting and items of one pair of the content, each checked on its own: a pair is at level
    /// 1, so its value may nest as deep as in a kind-1 record (§2). Items bound only the pairs
    /// inside a zone, which are built whole (a zone is one row): 1,048,576 hold far more than a
    /// profile or a message. A pair in the open zone is read as a stream (`PairStreamReader`),
    /// whatever its size.
    public static let pairLimits = CBORLimits(maxDepth: 38, maxItems: 1 << 20)
    /// What the check of distinctness in NFC may remember at once while it reads a pair's value
    /// (`KeyMemory`): each remembered key costs its NFC UTF-8 bytes plus 16.
    public static let maxRememberedKeyBytes = 4 << 20

    /// The chunks' sizes and hashes as a manifest, so that they are fetched, checked, stored and
    /// served like a file's. Its type is only a label; it is never on the wire.
    public var manifest: Manifest {
        Manifest(blob: content, size: size, contentType: "application/cbor", chunkSize: chunkSize, chunks: chunks)
    }

    /// Splits `content` into chunks of `chunkSize` bytes and hashes them.
    public static func describing(_ content: [UInt8], chunkSize: Int) -> (LargeWrite, [ArraySlice<UInt8>]) {
        let parts = stride(from: 0, to: content.count, by: chunkSize).map { content[$0..<min($0 + chunkSize, content.count)] }
        let write = LargeWrite(content: BLAKE2b.digest256(content), size: UInt64(content.count), chunkSize: UInt64(chunkSize),
                               chunks: BLAKE2b.digests256(parts))
        return (write, parts)
    }

    func validate() throws(RecordError) {
        guard size >= 1, size <= LargeWrite.maxSize else { throw .invalidBody("content size \(size) outside 1...\(LargeWrite.maxSize)") }
        guard Manifest.chunkSizes.contains(chunkSize) else { throw .invalidBody("chunk size \(chunkSize) outside \(Manifest.chunkSizes)") }
        guard UInt64(chunks.count) == (size + chunkSize - 1) / chunkSize else {
            throw .invalidBody("\(chunks.count) chunk hashes for \(size) bytes in chunks of \(chunkSize)")
        }
    }
}

extension RecordCodec {
    /// `[content, size, chunk-size, [+ chunk]]`
    static func encode(_ write: LargeWrite) -> CBOR {
        .array([.bytes(write.content.bytes), .unsigned(write.size), .unsigned(write.chunkSize),
                .array(write.chunks.map { .bytes($0.bytes) })])
    }

    static func decodeLargeWrite(_ item: CBOR) throws(RecordError) -> LargeWrite {
        guard case let .array(fields) = item, fields.count == 4,
              case let .bytes(content) = fields[0], let digest = try? Digest32(bytes: content),
              case let .unsigned(size) = fields[1], case let .unsigned(chunkSize) = fields[2],
              case let .array(chunkItems) = fields[3]
        else { throw .invalidBody("a large write is [content, size, chunk size, [chunk hashes]]") }
        var chunks = [Digest32]()
        chunks.reserveCapacity(chunkItems.count)
        for item in chunkItems {
            guard case let .bytes(hash) = item, let hash = try? Digest32(bytes: hash) else {
                throw .invalidBody("a chunk hash is not 32 bytes")
            }
            chunks.append(hash)
        }
        return LargeWrite(content: digest, size: size, chunkSize: chunkSize, chunks: chunks)
    }
}

/// The content of a large write: the pairs of a write, `[+ [path, value]]`, the same bytes a
/// kind-1 body would be, read as a stream of events (`read`) so that a receiver never builds a
/// pair's value unless it asks to (`forEachPair`, for pairs known to be small).
public enum LargeWriteContent {
    /// The content of `pairs`: their kind-1 body encoding. The pairs must be a valid write
    /// (`check`) in increasing order of their paths, as `Store.write` sorts them.
    public static func encode(_ pairs: [WritePair]) -> [UInt8] {
        RecordCodec.encodeBody(.write(canonical(pairs))).encoded()
    }

    /// `encode` of pairs already `canonical`.
    public static func encode(canonical pairs: [WritePair]) -> [UInt8] {
        RecordCodec.encodeBody(.write(pairs)).encoded()
    }

    /// `pairs` with every object key of their values in NFC, as a content holds them (§5.1).
    public static func canonical(_ pairs: [WritePair]) -> [WritePair] {
        guard case let .write(canonical) = RecordBody.write(pairs).withCanonicalKeys() else { return pairs }
        return canonical
    }

    /// Checks the rules of a write on pairs to be sent as a large write: those of a kind-1 write
    /// but for the count, 1 ... `LargeWrite.maxPairs`.
    public static func check(_ pairs: [WritePair]) throws(RecordError) {
        guard pairs.count <= LargeWrite.maxPairs else {
            throw .invalidBody("\(pairs.count) pairs exceed the limit of \(LargeWrite.maxPairs)")
        }
        try RecordCodec.validateWrite(pairs, order: .ofPaths, maxPairs: LargeWrite.maxPairs)
    }

    /// Checks `content` whole against the rules of a write (§3.4, §5.1) but for the count of
    /// pairs (1 ... `LargeWrite.maxPairs`): paths in strictly increasing order as written, valid,
    /// none equal to or an ancestor of another in NFC, every value valid, nothing after the last
    /// pair. Memory: what `PairStreamReader` holds, plus every pair's path.
    public static func validate(_ content: ArraySlice<UInt8>) throws(RecordError) {
        do {
            try validate(reading: LargeWriteContentSource(whole: content))
        } catch let error as RecordError {
            throw error
        } catch {
            throw .invalidBody("\(error)")
        }
    }

    /// `validate` of a content read a piece at a time from `source` (the chunks of a large write
    /// in the chunk store): memory is a piece, what `PairStreamReader` holds (never a pair's
    /// value whole) and every pair's path, never the content. A content that is not a valid
    /// write throws a `RecordError`; anything else thrown is the source's own (a disk that
    /// fails), which says nothing of the content.
    public static func validate(reading source: LargeWriteContentSource) throws {
        var paths = [Path]()
        try read(source) { event in
            if case let .pair(path) = event { paths.append(path) }
        }
        try RecordCodec.checkDisjoint(paths)
    }

    /// Calls `body` with each pair of `content` (keys in NFC) and the canonical encoding of its
    /// value, in order. Unless `checked` (the caller ran `validate`), the whole content is
    /// checked first, so a caller applying pairs never applies part of a content that turns out
    /// invalid. Each value is built whole: for contents whose pairs are known to be small.
    public static func forEachPair(in content: ArraySlice<UInt8>, checked: Bool = false,
                                   _ body: (WritePair, ArraySlice<UInt8>) throws -> Void) throws {
        if !checked { try validate(content) }
        try forEachPair(reading: LargeWriteContentSource(whole: content), body)
    }

    /// Calls `body` with each pair of a content read a piece at a time from `source`, which the
    /// caller checked already (`validate(reading:)` over the same bytes), among those whose
    /// path `wanted` accepts: those are built whole, the others are read past without being
    /// built. A content is read twice, once to check it and once to apply it, rather than held
    /// between the two.
    public static func forEachPair(reading source: LargeWriteContentSource, where wanted: (Path) -> Bool = { _ in true },
                                   _ body: (WritePair, ArraySlice<UInt8>) throws -> Void) throws {
        var builder: ContentValueBuilder?
        var path = Path.root
        try read(source) { event in
            switch event {
            case let .pair(at):
                path = at
                builder = wanted(at) ? ContentValueBuilder() : nil
            case .pairEnd:
                guard let value = builder?.value else { return }
                builder = nil
                try body(WritePair(path: path, value: value), TreeValueCodec.encode(value).encoded()[...])
            default:
                builder?.add(event)
            }
        }
    }

    /// Reads a content's pairs in order as events (`ContentEvent`), checking each pair as it goes
    /// (`PairStreamReader`) and the order of their paths as written; a pair's events are told
    /// only while it is valid, and a pair that is not throws at its end. Whether paths are
    /// disjoint is the caller's to check (`validate` does), since it needs them all.
    public static func read(_ source: LargeWriteContentSource, _ body: (ContentEvent) throws -> Void) throws {
        var window = ContentWindow(source: source)
        let head: (count: UInt64, length: Int)
        do {
            head = try window.decodeItem { bytes throws(CBORError) in
                let head = try CBORDecoder.arrayHead(bytes)
                return (head, head.length)
            }.item
        } catch let error as CBORError {
            throw RecordError.malformed(error)
        }
        guard head.count >= 1 else { throw RecordError.invalidBody("a write needs at least one pair") }
        guard head.count <= UInt64(LargeWrite.maxPairs) else {
            throw RecordError.invalidBody("\(head.count) pairs exceed the limit of \(LargeWrite.maxPairs)")
        }
        // Every pair takes at least 3 bytes (an array head, an empty path, a value).
        if let size = source.size, head.count > UInt64(max(0, size - head.length)) / 3 {
            throw RecordError.malformed(.truncated(offset: size))
        }
        var reader = PairStreamReader(window: window)
        for _ in 0..<head.count { try reader.readPair(body) }
        guard try reader.window.atEnd() else {
            throw RecordError.malformed(.trailingBytes(offset: reader.window.offset))
        }
    }
}

/// Where a content's bytes come from, in order: the whole content at hand, or its chunks read
/// one at a time (`Store` reads them from the chunk store and hashes them as they pass).
public struct LargeWriteContentSource {
    /// The next piece of the content, nil past its end.
    let next: () throws -> ArraySlice<UInt8>?
    /// The content's length, when known, to refuse a pair count that cannot fit before reading.
    let size: Int?

    public init(size: Int?, next: @escaping () throws -> ArraySlice<UInt8>?) {
        self.size = size
        self.next = next
    }

    /// The whole content, given at once.
    public init(whole content: ArraySlice<UInt8>) {
        var given = false
        self.init(size: content.count) {
            defer { given = true }
            return given ? nil : content
        }
    }
}

/// The bytes of a content between what was decoded and what was read: the item being decoded
/// and the rest of the last piece read, never the content.
///
/// Pairs are read from it a head or a string at a time (`byte`, `bytes`, by
/// `PairStreamReader`), so it holds at most one string and a piece. `decodeItem` decodes a whole
/// item (the content's array head): it retries on truncation, the window growing to at least
/// twice what it held at each retry, so an item of n bytes is decoded at most about
/// log2(n / piece) times over a total of about 2n bytes, not once per piece.
struct ContentWindow {
    let source: LargeWriteContentSource
    private var buffer = [UInt8]()
    /// Where the undecoded bytes start in `buffer`.
    private var start = 0
    /// Bytes dropped from the front of `buffer` so far.
    private var dropped = 0
    private var exhausted = false

    init(source: LargeWriteContentSource) { self.source = source }

    /// The offset in the content of the first byte not decoded yet.
    var offset: Int { dropped + start }

    /// Reads pieces until at least `count` bytes lie past `start`, or the content ends.
    private mutating func fill(_ count: Int) throws {
        while buffer.count - start < count, !exhausted {
            guard let piece = try source.next() else { exhausted = true; break }
            if start > 0 {
                buffer.removeSubrange(0..<start)
                dropped += start
                start = 0
            }
            buffer.append(contentsOf: piece)
        }
    }

    /// Decodes with `decode` from the undecoded bytes, reading more (twice as much each time)
    /// while it finds them truncated; consumes what it decoded and returns it with its bytes.
    mutating func decodeItem<T>(_ decode: (ArraySlice<UInt8>) throws(CBORError) -> (T, Int)) throws -> (item: T, bytes: ArraySlice<UInt8>) {
        try fill(1)
        while true {
            let available = buffer[start...]
            switch Result(catching: { () throws(CBORError) in try decode(available) }) {
            case let .success((item, length)):
                let bytes = buffer[start..<start + length]
                start += length
                return (item, bytes)
            case let .failure(.truncated(at)):
                guard !exhausted else { throw CBORError.truncated(offset: dropped + start + at) }
                try fill(max(available.count * 2, available.count + 1))
            case let .failure(error):
                throw error
            }
        }
    }

    /// The bytes left in the content past `offset`, when its size is known.
    var remaining: Int? { source.size.map { $0 - offset } }

    /// Bytes consumed since each `startRecording` still open, for the keys of a map, whose
    /// encodings are compared with the previous key's (keys within keys nest).
    private var recorded = [UInt8]()
    private var marks = [Int]()

    mutating func startRecording() { marks.append(recorded.count) }

    /// The bytes consumed since the matching `startRecording`.
    mutating func stopRecording() -> [UInt8] {
        let mark = marks.removeLast()
        let bytes = Array(recorded[mark...])
        if marks.isEmpty { recorded.removeAll(keepingCapacity: true) }
        return bytes
    }

    private mutating func consume(_ count: Int) {
        if !marks.isEmpty { recorded.append(contentsOf: buffer[start..<start + count]) }
        start += count
    }

    /// The next byte, consumed; throws `CBORError.truncated` past the content's end.
    mutating func byte() throws -> UInt8 {
        if start == buffer.count { try fill(1) }
        guard start < buffer.count else { throw CBORError.truncated(offset: offset) }
        let byte = buffer[start]
        consume(1)
        return byte
    }

    /// The next `count` bytes, consumed, or nil if the content ends before them. The window
    /// holds them at once: a string of the content is held whole, never more than one.
    mutating func bytes(_ count: Int) throws -> ArraySlice<UInt8>? {
        try fill(count)
        guard buffer.count - start >= count else { return nil }
        let bytes = buffer[start..<start + count]
        consume(count)
        return bytes
    }

    /// Whether every byte was decoded and the content ends there.
    mutating func atEnd() throws -> Bool {
        try fill(1)
        return buffer.count == start
    }
}
