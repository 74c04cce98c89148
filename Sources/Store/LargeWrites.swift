import Crypto
import SQLite
import Tree
import Wire

/// What a store can tell of a large write's content (Protocol.md §3.7).
enum LargeWriteContentState {
    /// Some chunk is not held yet.
    case missing
    /// Every chunk is held, but together they are not the content the record names.
    case mismatched
    case present([UInt8])
}

/// Large writes (record kind 4, Protocol.md §3.7): a record stored before its content's chunks
/// are held is noted in `pending_large_writes`; once every chunk is here the write is folded,
/// all its pairs in one transaction, exactly as a kind-1 write's. A content that is not a valid
/// write is never folded: the record stays stored (it is validly signed) and has no effect.
extension Store {
    /// Folds the large write now if its content is held; otherwise notes it as pending.
    func applyLargeWrite(_ record: Record, _ write: LargeWrite, seq: Int64) throws {
        switch try largeWriteContent(write) {
        case .missing:
            try db.run("INSERT OR IGNORE INTO pending_large_writes(seq) VALUES (?)", [.integer(seq)])
        case .mismatched:
            return
        case let .present(content):
            try foldLargeWrite(record, content: content, seq: seq)
        }
    }

    /// Folds the pairs of a held content if it is a valid write (`LargeWriteContent`); a content
    /// that is not changes nothing. Returns whether it was folded.
    @discardableResult
    func foldLargeWrite(_ record: Record, content: [UInt8], seq: Int64) throws -> Bool {
        do { try LargeWriteContent.validate(content[...]) } catch { return false }
        var scope = LargeWriteScope()
        try withPageCache(forContent: content.count) {
            var fold = PairFold(record: record, seq: seq)
            try LargeWriteContent.forEachPair(in: content[...], checked: true) { pair, encoded in
                scope.add(pair.path)
                try fold.apply(pair, in: self) { encoded }
            }
            try fold.finish(in: self)
        }
        noteLargeWriteScope(record.id, scope)
        return true
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

    /// The content of `write` from the chunk store, checked against the hash the record names.
    func largeWriteContent(_ write: LargeWrite) throws -> LargeWriteContentState {
        var content = [UInt8]()
        content.reserveCapacity(Int(write.size))
        for hash in write.chunks {
            let held = try chunkStore.withBytes(hash) { content.append(contentsOf: $0) }
            guard held else { return .missing }
        }
        guard content.count == Int(write.size), BLAKE2b.digest256(content) == write.content else { return .mismatched }
        return .present(content)
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
                    if case let .present(content) = try largeWriteContent(write),
                       try foldLargeWrite(record, content: content, seq: seq) {
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
            try withPageCache(forContent: content.count) {
                var fold = PairFold(record: record, seq: seq)
                for pair in pairs {
                    scope.add(pair.path)
                    try fold.apply(pair, in: self) { TreeValueCodec.encode(pair.value).encoded()[...] }
                }
                try fold.finish(in: self)
            }
            noteLargeWriteScope(record.id, scope)
        }
        return record
    }

    /// Runs `body`, which folds a large write's content of `bytes` in one transaction, with a
    /// page cache that holds what the transaction writes (8 times the content, at least the usual
    /// 16 MiB, at most 2 GiB), then gives the cache back its usual size, which frees the pages.
    ///
    /// Why: a transaction that writes more pages than the cache holds spills them to the WAL
    /// and reads them back one `pread` at a time as the fold goes on; for a 16 MB update of
    /// 100,000 children that was most of the time taken.
    func withPageCache<T>(forContent bytes: Int, _ body: () throws -> T) throws -> T {
        let kib = min(2 << 20, max(Store.pageCacheKiB, 8 * bytes / 1024))
        guard kib > Store.pageCacheKiB else { return try body() }
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

/// The deepest path at or above every path added: where a write's pairs lie.
struct LargeWriteScope {
    private(set) var path: Path?

    mutating func add(_ pair: Path) {
        guard var scope = path else { path = pair; return }
        while !scope.isAncestorOrSelf(of: pair), let parent = scope.parent { scope = parent }
        path = scope
    }
}
