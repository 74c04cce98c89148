import Crypto
import Glibc
import SQLite
import Tree
import Wire

/// The REST write a streamed body makes: PUT, PATCH or POST.
public enum StreamedWriteKind: Sendable {
    case set
    case update
    case push
}

/// Why a streamed write was refused, beyond the errors the in-memory writes throw.
public enum StreamedWriteError: Error, Equatable, Sendable {
    /// A PATCH body that is not an object.
    case notAnObject
    /// A write at a live path (Protocol.md §5.7), which takes small values only.
    case livePath(String)
}

/// Writes whose JSON body is read from a file a piece at a time (a REST body of up to 256 MiB,
/// spooled by the local API) and never held whole: the body's members go to a scratch SQLite
/// file as they are read (`StreamedWritePlan`), which sorts them; the large write's content
/// (Protocol.md §3.7) is then encoded from it in order, cut into chunks that go to the chunk
/// store as they are made, hashed as they pass. The record is signed, stored and folded from
/// those chunks as a peer's would be (`checkLargeWriteContent`, `foldLargeWrite`).
///
/// The content is the one `set`, `update` and `push` would make of the same body, byte for
/// byte: the same server values, normalization, zone split, permission checks and errors.
extension Store {
    /// Where the local API spools large request bodies and streamed writes keep their scratch
    /// files: `spool` in the data directory, next to the store.
    public var spoolDirectory: String {
        guard let slash = path.lastIndex(of: "/") else { return "spool" }
        return String(path[..<slash]) + "/spool"
    }

    /// Writes the JSON document `source` returns a piece at a time, as `kind` at `path`;
    /// returns the record and, for a push, the new child's key. Scratch files go in
    /// `scratchDirectory` and are removed before this returns.
    public func streamedWrite(_ kind: StreamedWriteKind, at path: Path, scratchDirectory: String,
                              source: @escaping () throws -> ArraySlice<UInt8>?,
                              signer: PrivateKey, nowMillis: UInt64) throws -> (record: Record, pushKey: String?) {
        var target = path
        var pushKey: String?
        if kind == .push {
            var rng = SecureRandom()
            var key = pushIDs.next(nowMillis: nowMillis, using: &rng)
            if Zone.isMessageList(path.segments) { key = MessageKey.bind(key, to: signer.publicKey.userID) }
            target = try path.appending(key)
            pushKey = key
        }
        let record = try tellingDiskErrors {
            let plan = try StreamedWritePlan(kind: kind == .update ? .update : .set, target: target, store: self,
                                             author: signer.publicKey, nowMillis: nowMillis, directory: scratchDirectory)
            try plan.read(source)
            try plan.prepare()
            if let pairs = try plan.smallPairs() {
                return try write(pairs, signer: signer, nowMillis: nowMillis)
            }
            try plan.checkLarge()
            return try writeStreamedContent(plan, signer: signer, nowMillis: nowMillis)
        }
        return (record, pushKey)
    }

    /// The content `streamedWrite` would sign for the document, without writing anything: for
    /// tests that compare it with the in-memory writes' content.
    func streamedContent(_ kind: StreamedWriteKind, at target: Path, scratchDirectory: String,
                         source: @escaping () throws -> ArraySlice<UInt8>?, author: PublicKey, nowMillis: UInt64) throws -> [UInt8] {
        let plan = try StreamedWritePlan(kind: kind == .update ? .update : .set, target: target, store: self, author: author,
                                         nowMillis: nowMillis, directory: scratchDirectory)
        try plan.read(source)
        try plan.prepare()
        try plan.checkLarge()
        var content = [UInt8]()
        try plan.emit { content.append(contentsOf: $0) }
        return content
    }

    /// The pairs `set` or `update` would write for `raw` (resolved, normalized, split for the
    /// zones), in path order: for tests that compare contents.
    func plannedPairs(_ kind: StreamedWriteKind, at path: Path, raw: JSONValue, author: PublicKey, nowMillis: UInt64) throws -> [WritePair] {
        var failedRead: (any Error)?
        let pairs: [WritePair]
        if kind == .update {
            let children = try UpdateBatch.validateUpdate(at: path, raw, nowMillis: Double(nowMillis)) { currentValue(at: $0, failure: &failedRead) }
            pairs = children.map { WritePair(path: $0.0, value: $0.1) }
        } else {
            let value = try raw.resolvingServerValues(at: path, nowMillis: Double(nowMillis)) { currentValue(at: $0, failure: &failedRead) }
                .normalized()
            pairs = [WritePair(path: path, value: value)]
        }
        if let failedRead { throw failedRead }
        return try splitForZones(pairs, author: author)
            .sorted { Array($0.path.storageKey.utf8).lexicographicallyPrecedes(Array($1.path.storageKey.utf8)) }
    }

    /// Encodes the plan's content into chunks in the chunk store, then signs, stores and folds
    /// the large write in one transaction. The content is checked from its chunks before it is
    /// folded, as a peer checks it: a content that is not a valid write is never signed.
    private func writeStreamedContent(_ plan: StreamedWritePlan, signer: PrivateKey, nowMillis: UInt64) throws -> Record {
        let chunkSize = Store.chunkSize
        let whole = ContentHash()
        var hashes = [Digest32]()
        var piece = [UInt8]()
        piece.reserveCapacity(chunkSize)
        var batch = [(hash: Digest32, bytes: ArraySlice<UInt8>)]()
        let chunkDB = self.chunkDB
        let chunkStore = self.chunkStore
        func store(_ chunks: [(hash: Digest32, bytes: ArraySlice<UInt8>)]) throws {
            do {
                _ = try chunkDB.transaction(.immediate) { try chunkStore.append(chunks) }
            } catch let error as SQLiteError {
                throw StoreError.from(error, path: chunkDB.path)
            }
        }
        func cut() throws {
            let hash = BLAKE2b.digest256(piece)
            whole.update(piece)
            hashes.append(hash)
            batch.append((hash, piece[...]))
            piece.removeAll(keepingCapacity: true)
            if batch.count >= 16 {
                try store(batch)
                batch.removeAll()
            }
        }
        try plan.emit { bytes in
            var rest = bytes[...]
            while !rest.isEmpty {
                let taken = rest.prefix(chunkSize - piece.count)
                piece.append(contentsOf: taken)
                rest = rest.dropFirst(taken.count)
                if piece.count == chunkSize { try cut() }
            }
        }
        if !piece.isEmpty { try cut() }
        if !batch.isEmpty { try store(batch) }
        guard let digest = whole.digest() else { throw RecordError.invalidBody("the content was hashed twice") }
        let write = LargeWrite(content: digest, size: UInt64(whole.count), chunkSize: UInt64(chunkSize), chunks: hashes)
        return try transaction {
            let record = try Record.make(body: .largeWrite(write), clock: try nextClock(nowMillis: nowMillis), signer: signer)
            if let seq = try insert(record) {
                guard try checkLargeWriteContent(write) == .valid else {
                    throw RecordError.invalidBody("the content made of the request is not a valid write")
                }
                try foldLargeWrite(record, write, seq: seq)
            }
            return record
        }
    }
}
