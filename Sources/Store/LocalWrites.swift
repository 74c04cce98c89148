import Crypto
import SQLite
import Tree
import Wire

/// The Firebase write operations on a local store: each resolves server values, normalizes,
/// signs one record and ingests it in one transaction, so the write is durable before the call
/// returns.
extension Store {
    /// `set`: replaces the value at `path` (null deletes).
    @discardableResult
    public func set(_ path: Path, to raw: JSONValue, signer: PrivateKey, nowMillis: UInt64) throws -> Record {
        var failedRead: (any Error)?
        let value = try raw.resolvingServerValues(at: path, nowMillis: Double(nowMillis)) { currentValue(at: $0, failure: &failedRead) }
            .normalized()
        if let failedRead { throw failedRead }
        return try tellingDiskErrors {
            try write(splitForZones([WritePair(path: path, value: value)], author: signer.publicKey), signer: signer, nowMillis: nowMillis)
        }
    }

    /// `update`: replaces each listed child (keys are relative paths, possibly multi-segment).
    @discardableResult
    public func update(_ path: Path, with raw: JSONValue, signer: PrivateKey, nowMillis: UInt64) throws -> Record {
        // More children than any write holds: refused before each is checked.
        if case let .object(members) = raw, members.count > LargeWrite.maxPairs {
            throw RecordError.invalidBody("\(members.count) pairs exceed the limit of \(LargeWrite.maxPairs)")
        }
        var failedRead: (any Error)?
        let children = try UpdateBatch.validateUpdate(at: path, raw, nowMillis: Double(nowMillis)) { currentValue(at: $0, failure: &failedRead) }
        if let failedRead { throw failedRead }
        let pairs = children.map { WritePair(path: $0.0, value: $0.1) }
        return try tellingDiskErrors { try write(splitForZones(pairs, author: signer.publicKey), signer: signer, nowMillis: nowMillis) }
    }

    /// `push`: a new child under `path` named by a Firebase push id; returns the id. A new
    /// message (under `/conversations/$cid/messages`) gets a key bound to its author
    /// (`MessageKey`), so that no other member can ever own it.
    public func push(_ path: Path, value raw: JSONValue, signer: PrivateKey, nowMillis: UInt64) throws -> (key: String, record: Record) {
        var rng = SecureRandom()
        var key = pushIDs.next(nowMillis: nowMillis, using: &rng)
        if Zone.isMessageList(path.segments) { key = MessageKey.bind(key, to: signer.publicKey.userID) }
        let record = try set(try path.appending(key), to: raw, signer: signer, nowMillis: nowMillis)
        return (key, record)
    }

    /// `delete`: removes the value at `path`.
    @discardableResult
    public func delete(_ path: Path, signer: PrivateKey, nowMillis: UInt64) throws -> Record {
        try set(path, to: .null, signer: signer, nowMillis: nowMillis)
    }

    /// Signs `pairs` as one record stamped by the local clock and stores it. Pairs the write
    /// rules would ignore are refused with `permissionDenied` rather than signed.
    public func write(_ pairs: [WritePair], signer: PrivateKey, nowMillis: UInt64) throws -> Record {
        for pair in pairs { try checkPermission(pair, author: signer.publicKey) }
        let sorted = pairs.sorted { Array($0.path.storageKey.utf8).lexicographicallyPrecedes(Array($1.path.storageKey.utf8)) }
        // A write into a private conversation is sealed in its current epoch (Protocol.md §11.4);
        // one record cannot be both sealed and plain, nor sealed for two conversations.
        let conversations = Set(sorted.map { Store.privateConversation(of: $0.path) })
        if conversations.count == 1, let conversation = conversations.first!, sorted.allSatisfy({ $0.path.depth >= 3 }) {
            return try transaction { try writeSealed(sorted, conversation: conversation, signer: signer, nowMillis: nowMillis) }
        }
        if conversations.contains(where: { $0 != nil }) {
            let path = sorted.first { Store.privateConversation(of: $0.path) != nil }!.path
            throw StoreError.permissionDenied(path: path.description)
        }
        // Too many pairs or bytes for one record: a large write (Protocol.md §3.7), folded alike.
        // Near the record's limit the estimate cannot tell, and the record is tried first.
        switch Store.recordFit(sorted) {
        case .large:
            return try transaction { try writeLargeRecord(sorted, signer: signer, nowMillis: nowMillis) }
        case .record:
            return try transaction { try writeRecord(.write(sorted), signer: signer, nowMillis: nowMillis) }
        case .maybe:
            do {
                return try transaction { try writeRecord(.write(sorted), signer: signer, nowMillis: nowMillis) }
            } catch RecordError.tooLarge {
                return try transaction { try writeLargeRecord(sorted, signer: signer, nowMillis: nowMillis) }
            }
        }
    }

    /// The value at `path` for a server value (an increment) to build on. A read that fails is
    /// kept in `failure` for the caller to throw once the pure resolver returns: taking it for
    /// null would turn an increment into a plain write of the step when the disk hiccups.
    func currentValue(at path: Path, failure: inout (any Error)?) -> JSONValue {
        do {
            return try value(at: path)
        } catch let error as SQLiteError {
            if failure == nil { failure = StoreError.from(error, path: self.path) }
        } catch {
            if failure == nil { failure = error }
        }
        return .null
    }

    /// Runs `body`, which reads outside a transaction too (the zones a write clears), telling an
    /// SQLite error the way the store's transactions do: a full disk or an I/O error with the file.
    func tellingDiskErrors<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as SQLiteError {
            throw StoreError.from(error, path: path)
        }
    }

    /// Signs and stores one record of any kind; call inside a transaction.
    func writeRecord(_ body: RecordBody, signer: PrivateKey, nowMillis: UInt64) throws -> Record {
        let record = try Record.make(body: body, clock: try nextClock(nowMillis: nowMillis), signer: signer)
        if let seq = try insert(record) { try apply(record, seq: seq) }
        return record
    }

    /// Whether the write rules (Protocol.md §5.4) would let `author`'s pair take effect now.
    func checkPermission(_ pair: WritePair, author: PublicKey) throws {
        let zone = Zone.of(pair.path)
        switch zone {
        case .open:
            return
        case let .user(uid):
            guard uid == author.userID else { throw StoreError.permissionDenied(path: pair.path.description) }
        case let .message(_, key):
            // Free, the author's already, or bound to the author: anything else would count for
            // nothing (another's message) or hide the message (a second claim on an unbound key).
            let owner = try db.first("SELECT owner FROM zones WHERE zone = ?", [.text(StoreKey.of(zone))]) { $0.blob(0) }
            guard owner == nil || owner == author.bytes || MessageKey.isBound(key, to: author.userID),
                  Zone.keepsSenderID(path: pair.path, value: pair.value, author: author.userID)
            else { throw StoreError.permissionDenied(path: pair.path.description) }
        }
    }

    /// Rewrites pairs in the open zone so that what they carry into protected zones is written
    /// at the zone roots (where the write rules let it count), and a replaced subtree also clears
    /// the zones below it that the author may clear (their own profile and messages).
    func splitForZones(_ pairs: [WritePair], author: PublicKey) throws -> [WritePair] {
        var result = [WritePair]()
        for pair in pairs {
            // A pair in a zone, or one that can neither carry nor clear a zone, is kept as is.
            guard Zone.of(pair.path) == .open, Zone.mayHoldZones(pair.path.segments) else {
                result.append(pair)
                continue
            }
            result.append(WritePair(path: pair.path, value: Zone.stripZones(pair.value, at: pair.path)))
            var carried = [String: WritePair]()
            Store.zoneRoots(in: pair.value, at: pair.path) { root, value in
                carried[root.storageKey] = WritePair(path: root, value: value)
            }
            for root in try ownedZones(below: pair.path, author: author) where carried[root.storageKey] == nil {
                carried[root.storageKey] = WritePair(path: root, value: .null)
            }
            result += carried.values
        }
        return result
    }

    /// Calls `body` for every zone root inside `value` written at `path`.
    static func zoneRoots(in value: JSONValue, at path: Path, _ body: (Path, JSONValue) -> Void) {
        guard path.segments.count < 4, case let .object(members) = value else { return }
        for (key, child) in members {
            guard let childPath = try? path.appending(key) else { continue }
            if Zone.isRoot(childPath.segments) {
                body(childPath, child)
            } else {
                zoneRoots(in: child, at: childPath, body)
            }
        }
    }

    /// The zones below `path` whose content `author` controls: their own profile and the
    /// messages they own.
    func ownedZones(below path: Path, author: PublicKey) throws -> [Path] {
        var zones = [Path]()
        let profile = try Path(segments: ["users", author.userID])
        if path.isAncestor(of: profile), try value(at: profile) != .null { zones.append(profile) }
        let key = StoreKey.of(path)
        let (low, high) = StoreKey.descendants(key)
        try db.query("SELECT zone FROM zones WHERE zone >= ? AND zone < ? AND owner = ? AND value IS NOT NULL",
                     [.text(low), .text(high), .blob(author.bytes)]) { row in
            let zone = try StoreKey.path(row.text(0))
            if zone != profile { zones.append(zone) }
        }
        return zones
    }
}
