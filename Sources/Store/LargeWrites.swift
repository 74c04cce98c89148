import Crypto
import SQLite
import Tree
import Wire

/// What a store can tell of a large write's content (Protocol.md §3.7).
enum LargeWriteContentState {
    /// Some chunk is not held yet.
    case missing
    /// Every chunk is held, but together they are not the content the record names, or not a
    /// valid write: the write has no effect.
    case void
    /// Every chunk is held and they are the valid write the record names.
    case valid
}

/// Large writes (record kind 4, Protocol.md §3.7): a record stored before its content's chunks
/// are held is noted in `pending_large_writes`; once every chunk is here the write is folded,
/// all its pairs in one transaction, exactly as a kind-1 write's. A content that is not a valid
/// write is never folded: the record stays stored (it is validly signed) and has no effect.
///
/// The content is never held whole, nor any pair of the open zone: it is read from the chunk
/// store a chunk at a time, twice, as a stream of events (`LargeWriteContent.read`). The first
/// pass hashes it (libsodium's streaming BLAKE2b) and checks it is a valid write
/// (`LargeWriteContent.validate(reading:)`), so that an invalid content changes nothing; the
/// second folds its pairs as they are read (`StreamedPairFold`): an open pair's leaves go to
/// the tree one at a time, a zone's pair is built whole (one row, at most
/// `LargeWrite.pairLimits.maxItems` items). Memory is a chunk, what the stream's checks hold
/// (`PairStreamReader`), one zone pair, and every pair's path (for the check that none is an
/// ancestor of another), not the up to 256 MiB of content nor a pair's value; reading 64 KiB
/// chunks from the pack's map twice costs little next to the fold.
///
/// The fold is still one transaction on the store's connection, on the node's queue: a reader
/// must never see part of a large write, and a fold cut into transactions would show it in
/// part. It takes the usual page cache: the pairs come sorted by path and the tree's rows are
/// keyed by path, so they are inserted in key order and a cache as large as the write bought
/// nothing measurable (BENCHMARKS.md, "Large writes folded by a peer").
extension Store {
    /// Folds the large write now if its content is held; otherwise notes it as pending.
    func applyLargeWrite(_ record: Record, _ write: LargeWrite, seq: Int64) throws {
        switch try checkLargeWriteContent(write) {
        case .missing:
            try db.run("INSERT OR IGNORE INTO pending_large_writes(seq) VALUES (?)", [.integer(seq)])
        case .void:
            return
        case .valid:
            try foldLargeWrite(record, write, seq: seq)
        }
    }

    /// Folds the pairs of a held content that `checkLargeWriteContent` found valid, reading it
    /// from its chunks once more.
    func foldLargeWrite(_ record: Record, _ write: LargeWrite, seq: Int64) throws {
        var scope = LargeWriteScope()
        try withPageCache(kib: largeWriteCacheKiB) {
            var fold = StreamedPairFold(record: record, seq: seq, store: self)
            try LargeWriteContent.read(largeWriteSource(write, hash: nil)) { event in
                if case let .pair(path) = event { scope.add(path) }
                try fold.take(event)
            }
            try fold.finish()
        }
        noteLargeWriteScope(record.id, scope)
    }

    /// The deepest path at or above every pair of the large write `id`, if it was folded lately
    /// (the last `maxLargeWriteScopes`). Its record names no paths, so without this a listener
    /// could only be told that anything may have changed; with it, only the listeners at, above
    /// or below that path read their locations again.
    public func largeWriteScope(of id: Digest32) -> Path? { largeWriteScopes[id] }

    static let maxLargeWriteScopes = 64

    func noteLargeWriteScope(_ id: Digest32, _ scope: LargeWriteScope) {
        guard let path = scope.path else { return }
        if largeWriteScopes.updateValue(path, forKey: id) == nil { largeWriteScopeOrder.append(id) }
        if largeWriteScopeOrder.count > Self.maxLargeWriteScopes {
            largeWriteScopes.removeValue(forKey: largeWriteScopeOrder.removeFirst())
        }
    }

    /// Whether the content of `write` is held, is the one its record names (its size and
    /// BLAKE2b-256) and is a valid write: one pass over its chunks, none held whole.
    func checkLargeWriteContent(_ write: LargeWrite) throws -> LargeWriteContentState {
        for hash in write.chunks where try !chunkStore.has(hash) { return .missing }
        let hash = ContentHash()
        do {
            try LargeWriteContent.validate(reading: largeWriteSource(write, hash: hash))
        } catch is RecordError {
            return .void
        } catch LargeWriteChunkMissing.missing {
            return .missing
        }
        // The walk reads to the content's end (it checks nothing follows the last pair).
        guard hash.count == Int(write.size), hash.digest() == write.content else { return .void }
        return .valid
    }

    /// The content of `write`, a chunk at a time from the chunk store, each chunk passed to
    /// `hash` when given. A chunk gone meanwhile throws `LargeWriteChunkMissing`.
    func largeWriteSource(_ write: LargeWrite, hash: ContentHash?) -> LargeWriteContentSource {
        var index = 0
        let chunks = write.chunks
        let chunkStore = self.chunkStore
        return LargeWriteContentSource(size: Int(write.size)) {
            guard index < chunks.count else { return nil }
            var piece = [UInt8]()
            guard try chunkStore.withBytes(chunks[index], { piece = Array($0) }) else { throw LargeWriteChunkMissing.missing }
            index += 1
            hash?.update(piece)
            return piece[...]
        }
    }

    /// Each pair inside a zone of the held, valid content of `write` (`checkLargeWriteContent`),
    /// read from its chunks (for the zones' folds, which read records again). Only those are
    /// built, each bounded as a zone's pair (`LargeWrite.pairLimits`); the open zone's pairs,
    /// of any size, are read past.
    func forEachLargeWriteZonePair(_ write: LargeWrite, _ body: (WritePair) throws -> Void) throws {
        try LargeWriteContent.forEachPair(reading: largeWriteSource(write, hash: nil), where: { Zone.of($0) != .open }) { pair, _ in
            try body(pair)
        }
    }

    /// The chunks that the large writes waiting for their content still need, each once.
    public func missingLargeWriteChunks() throws -> [Digest32] {
        var missing = [Digest32]()
        var seen = Set<Digest32>()
        for (_, write) in try pendingLargeWrites() {
            for hash in write.chunks where seen.insert(hash).inserted {
                if try !chunkStore.has(hash) { missing.append(hash) }
            }
        }
        return missing
    }

    /// Whether some large write waits for its content.
    public var hasPendingLargeWrites: Bool {
        get throws { try db.scalarInt("SELECT count(*) FROM (SELECT 1 FROM pending_large_writes LIMIT 1)") == 1 }
    }

    /// Folds every pending large write whose chunks are all held now, each in one transaction;
    /// returns those that took effect (a content that is not a valid write is dropped from the
    /// list but has no effect).
    @discardableResult
    public func applyCompletedLargeWrites() throws -> [Record] {
        var applied = [Record]()
        for (seq, write) in try pendingLargeWrites() {
            guard try write.chunks.allSatisfy({ try chunkStore.has($0) }) else { continue }
            try tellingDiskErrors {
                try transaction {
                    guard let bytes = try db.first("SELECT bytes FROM records WHERE seq = ?", [.integer(seq)], { $0.blob(0) }),
                          let record = try? Record.decode(bytes, verify: false) else { return }
                    switch try checkLargeWriteContent(write) {
                    case .missing: return  // a chunk gone since: still pending
                    case .void: break
                    case .valid:
                        try foldLargeWrite(record, write, seq: seq)
                        applied.append(record)
                    }
                    try db.run("DELETE FROM pending_large_writes WHERE seq = ?", [.integer(seq)])
                }
            }
        }
        return applied
    }

    /// The large writes waiting for their content, by arrival number.
    func pendingLargeWrites() throws -> [(seq: Int64, write: LargeWrite)] {
        try db.all("SELECT records.seq, records.bytes FROM pending_large_writes JOIN records USING (seq) ORDER BY seq", []) { row in
            (row.int64(0), row.blob(1))
        }.compactMap { seq, bytes in
            guard let record = try? Record.decode(bytes, verify: false), case let .largeWrite(write) = record.body else { return nil }
            return (seq, write)
        }
    }

    /// Signs `pairs` (sorted, checked) as a large write: the content's chunks are made durable
    /// in the chunk store first, then the record is stored and folded. Call inside a transaction.
    func writeLargeRecord(_ pairs: [WritePair], signer: PrivateKey, nowMillis: UInt64) throws -> Record {
        let pairs = LargeWriteContent.canonical(pairs)
        try LargeWriteContent.check(pairs)
        let content = LargeWriteContent.encode(canonical: pairs)
        guard content.count <= Int(LargeWrite.maxSize) else {
            throw RecordError.tooLarge(size: content.count, limit: Int(LargeWrite.maxSize))
        }
        let (write, parts) = LargeWrite.describing(content, chunkSize: Store.chunkSize)
        do {
            try chunkDB.transaction(.immediate) { _ = try chunkStore.append(Array(zip(write.chunks, parts))) }
        } catch let error as SQLiteError {
            throw StoreError.from(error, path: chunkDB.path)
        }
        // The pairs are at hand: folded as they are rather than read back from the chunks.
        let record = try Record.make(body: .largeWrite(write), clock: try nextClock(nowMillis: nowMillis), signer: signer)
        if let seq = try insert(record) {
            var scope = LargeWriteScope()
            var fold = PairFold(record: record, seq: seq)
            for pair in pairs {
                scope.add(pair.path)
                try fold.apply(pair, in: self) { TreeValueCodec.encode(pair.value).encoded()[...] }
            }
            try fold.finish(in: self)
            noteLargeWriteScope(record.id, scope)
        }
        return record
    }

    /// Runs `body` with a page cache of `kib` KiB (when above the usual), then gives the cache
    /// back its usual size, which frees the pages. Only for comparisons (`largeWriteCacheKiB`).
    func withPageCache<T>(kib: Int?, _ body: () throws -> T) throws -> T {
        guard let kib, kib > Store.pageCacheKiB else { return try body() }
        try db.execute("PRAGMA cache_size = -\(kib)")
        defer { try? db.execute("PRAGMA cache_size = -\(Store.pageCacheKiB)") }
        return try body()
    }

    enum RecordFit { case record, maybe, large }

    /// Whether `pairs` fit in one record: surely (well below its size), surely not (more pairs
    /// than a record holds, or an encoding surely past its size), or maybe (close to its size:
    /// only the encoding tells).
    static func recordFit(_ pairs: [WritePair]) -> RecordFit {
        if pairs.count > RecordLimits.maxPairs { return .large }
        // An upper bound of the encoding, and a lower bound about a ninth of it at worst.
        var estimate = 0
        for pair in pairs {
            estimate += pair.path.storageKey.utf8.count + pair.value.estimatedEncodedBytes + 12
            if estimate > 9 * RecordLimits.maxRecordBytes { return .large }
        }
        return estimate <= RecordLimits.maxRecordBytes - 256 ? .record : .maybe
    }
}

extension JSONValue {
    /// An upper bound of the CBOR encoding's size, without encoding (a cheap walk).
    var estimatedEncodedBytes: Int {
        switch self {
        case .null, .bool: return 1
        case .number: return 9
        case let .string(s): return s.utf8.count + 9
        case let .array(items): return items.reduce(9) { $0 + $1.estimatedEncodedBytes }
        case let .object(members): return members.reduce(9) { $0 + $1.key.utf8.count + 9 + $1.value.estimatedEncodedBytes }
        }
    }
}

/// A chunk of a large write's content that was held when checked is gone when read.
enum LargeWriteChunkMissing: Error { case missing }

/// The streaming BLAKE2b-256 of a content read a chunk at a time, and its length so far; a
/// class so that a content source (an escaping closure) can feed it.
final class ContentHash {
    private var hasher: BLAKE2b.Hasher? = BLAKE2b.Hasher(length: 32)
    private(set) var count = 0

    func update(_ bytes: [UInt8]) {
        hasher?.update(bytes)
        count += bytes.count
    }

    /// The digest of what was read; once.
    func digest() -> Digest32? {
        guard let finished = hasher.take() else { return nil }
        return try? Digest32(bytes: finished.finalize())
    }
}

/// The deepest path at or above every path added: where a write's pairs lie.
struct LargeWriteScope {
    private(set) var path: Path?

    mutating func add(_ pair: Path) {
        guard var scope = path else { path = pair; return }
        while !scope.isAncestorOrSelf(of: pair), let parent = scope.parent { scope = parent }
        path = scope
    }
}

/// The chunks of large writes in export streams (Protocol.md §4, version 2): without them an
/// import elsewhere holds the large writes' records and never their content, so shows nothing
/// of them.
extension Store {
    /// Whether some large write is stored: its export carries chunks (a stream of version 2).
    public var hasLargeWrites: Bool {
        get throws { try db.scalarInt("SELECT count(*) FROM (SELECT 1 FROM records WHERE kind = 4 LIMIT 1)") == 1 }
    }

    /// Calls `body` with the bytes of every held chunk of every stored large write, each once,
    /// in the order of the records and of their chunks.
    public func forEachLargeWriteChunk(_ body: ([UInt8]) throws -> Void) throws {
        var seen = Set<Digest32>()
        let writes = try db.all("SELECT bytes FROM records WHERE kind = 4 ORDER BY seq", []) { $0.blob(0) }
        for bytes in writes {
            guard let record = try? Record.decode(bytes, verify: false), case let .largeWrite(write) = record.body else { continue }
            for hash in write.chunks where seen.insert(hash).inserted {
                var chunk: [UInt8]?
                _ = try chunkStore.withBytes(hash) { chunk = Array($0) }
                if let chunk { try body(chunk) }
            }
        }
    }

    /// Stores those of `chunks` that some stored large write still waits for (checked by their
    /// hash, which is how they are named), then folds the large writes now complete. A chunk
    /// that no waiting large write names is not kept: an import cannot fill the chunk store with
    /// bytes nothing asks for. Returns how many chunks were kept and the writes that took effect.
    public func importLargeWriteChunks(_ chunks: [ArraySlice<UInt8>]) throws -> (kept: Int, applied: [Record]) {
        let wanted = Set(try missingLargeWriteChunks())
        guard !wanted.isEmpty else { return (0, []) }
        let hashes = BLAKE2b.digests256(chunks)
        let kept = zip(hashes, chunks).filter { wanted.contains($0.0) }.map { (hash: $0.0, bytes: $0.1) }
        guard !kept.isEmpty else { return (0, []) }
        let added: Int
        do {
            added = try chunkDB.transaction(.immediate) { try chunkStore.append(kept) }
        } catch let error as SQLiteError {
            throw StoreError.from(error, path: chunkDB.path)
        }
        return (added, try applyCompletedLargeWrites())
    }
}
