import Crypto
import Tree

/// Bounds on one record (Protocol.md §3.4).
public enum RecordLimits {
    /// Largest encoded record, in bytes.
    public static let maxRecordBytes = 1 << 20
    /// Most path/value pairs in one write.
    public static let maxPairs = 1_000
    /// Deepest CBOR nesting: record, body, pair, then a value at most 32 levels deep.
    static let cbor = CBORLimits(maxDepth: 40, maxItems: 200_000)
}

/// What a record is; the number is its `kind` field on the wire.
public enum RecordKind: UInt64, Sendable {
    /// One or more path/value pairs applied atomically (set, update, delete).
    case write = 1
    /// A blob manifest: size, type, chunk size and the hash of every chunk.
    case manifest = 2
    /// A file entry: a storage path names a manifest (or nothing, when deleted).
    case file = 3
    /// A write whose pairs travel as chunks named by the record (`LargeWrite`).
    case largeWrite = 4
    /// A private conversation's key record: an epoch key sealed to each member (Protocol.md §11).
    case groupKey = 5
    /// A write sealed under an epoch key of a private conversation.
    case sealedWrite = 6
    /// A member leaves a private conversation.
    case leave = 7
}

/// One path/value pair of a write. A null value deletes.
///
/// A message's value, an object at its zone's root, is held as the canonical bytes it arrived
/// in (checked as the decoder would, `OnePairWriteReader`) and built only when asked for. Why:
/// storing a message reads a few of its members (the sender, a photo), and building the whole
/// object for that, then freeing it, took about 2,000 of the 50,000 instructions a stored record
/// cost beside its signature check (callgrind of `lanchat import`).
public struct WritePair: Hashable, Sendable {
    public let path: Path
    private let held: Held

    private enum Held: Sendable {
        case value(JSONValue)
        /// A non-empty object's canonical encoding, every key plain (`Key.isPlainASCII`).
        case object(ArraySlice<UInt8>)
    }

    public init(path: Path, value: JSONValue) {
        self.path = path
        self.held = .value(value)
    }

    /// `bytes` hold an object that `OnePairWriteReader` checked as a value at `path`, with no
    /// key it would respell.
    init(path: Path, checkedObject bytes: ArraySlice<UInt8>) {
        self.path = path
        self.held = .object(bytes)
    }

    /// The value, built from its bytes each time when held as bytes: callers that read it
    /// more than once keep it.
    public var value: JSONValue {
        switch held {
        case let .value(value): return value
        case let .object(bytes): return OnePairWriteReader.checkedValue(bytes, at: path)
        }
    }

    /// The canonical encoding of the value when it is held as bytes (`TreeValueCodec.encode`
    /// would give the same), nil otherwise.
    public var heldEncoding: ArraySlice<UInt8>? {
        if case let .object(bytes) = held { return bytes } else { return nil }
    }

    /// Whether the value is null (a delete).
    public var isNull: Bool {
        if case .value(.null) = held { return true } else { return false }
    }

    /// A member of an object value (nil for a value that is no object, or has no such member),
    /// found without building the rest of the object.
    public func member(_ key: String) -> JSONValue? {
        switch held {
        case let .value(value):
            guard case let .object(members) = value else { return nil }
            return members[key]
        case let .object(bytes):
            return OnePairWriteReader.checkedMember(key, of: bytes, at: path)
        }
    }

    public static func == (a: WritePair, b: WritePair) -> Bool {
        a.path == b.path && a.value == b.value
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(path)
        hasher.combine(value)
    }
}

/// The content a record carries, by kind.
public enum RecordBody: Hashable, Sendable {
    /// Pairs sorted by path storage key, none an ancestor of another.
    case write([WritePair])
    case manifest(Manifest)
    case file(FileEntry)
    case largeWrite(LargeWrite)
    case groupKey(GroupKeyBody)
    case sealedWrite(SealedWriteBody)
    case leave(LeaveBody)

    public var kind: RecordKind {
        switch self {
        case .write: return .write
        case .manifest: return .manifest
        case .file: return .file
        case .largeWrite: return .largeWrite
        case .groupKey: return .groupKey
        case .sealedWrite: return .sealedWrite
        case .leave: return .leave
        }
    }
}

/// An immutable signed record: the unit of storage and of sync. Its bytes are canonical, its id
/// is the BLAKE2b-256 of those bytes, and its signature covers everything else.
///
/// Its fields live in one shared, immutable object, so a copy of a record is one reference
/// count, not one per field: records are copied into batches, sets and relays by the million
/// during a sync, and each field holds an array.
public struct Record: Hashable, Sendable {
    /// The only version this code writes and reads.
    public static let version: UInt64 = 1
    /// Prefixed to the unsigned bytes before signing, so a record signature can never be
    /// mistaken for a signature made for another purpose.
    public static let signingDomain: [UInt8] = Array("lanchat/record/v1".utf8) + [0]

    @usableFromInline
    final class Fields: Sendable {
        @usableFromInline let author: PublicKey
        @usableFromInline let clock: UInt64
        @usableFromInline let body: RecordBody
        @usableFromInline let signature: Signature
        @usableFromInline let encoded: [UInt8]
        @usableFromInline let id: Digest32
        let valuesRespelled: Bool

        init(author: PublicKey, clock: UInt64, body: RecordBody, signature: Signature, encoded: [UInt8], id: Digest32,
             valuesRespelled: Bool) {
            self.author = author
            self.clock = clock
            self.body = body
            self.signature = signature
            self.encoded = encoded
            self.id = id
            self.valuesRespelled = valuesRespelled
        }
    }
    // Inlinable, as the stored properties they replace were: other modules read them per
    // record, and a call for each read showed in a sync's profile.
    @usableFromInline let fields: Fields

    @inlinable public var author: PublicKey { fields.author }
    /// Hybrid logical clock: milliseconds << 16 | counter.
    @inlinable public var clock: UInt64 { fields.clock }
    @inlinable public var body: RecordBody { fields.body }
    @inlinable public var signature: Signature { fields.signature }
    /// The canonical encoding (what is stored, sent and hashed).
    @inlinable public var encoded: [UInt8] { fields.encoded }
    /// BLAKE2b-256 of `encoded`.
    @inlinable public var id: Digest32 { fields.id }
    /// Whether some object key inside a pair's value is spelled otherwise in `encoded` than in
    /// `body` (which holds every key in NFC, Protocol.md §5.1): then a value's bytes are not the
    /// encoding of the value (`pairValueEncodings`).
    var valuesRespelled: Bool { fields.valuesRespelled }

    /// Two records are equal when their bytes are: every field is read from them.
    public static func == (a: Record, b: Record) -> Bool {
        a.fields === b.fields || (a.id == b.id && a.encoded == b.encoded)
    }

    public func hash(into hasher: inout Hasher) { hasher.combine(id) }

    public var kind: RecordKind { body.kind }

    /// Where this record stands in write order: (clock, author, id).
    public var order: WriteOrder { WriteOrder(clock: clock, author: author, id: id) }

    /// Makes and signs a record. Throws when the body breaks a rule or the result is too large.
    /// Keys are written in NFC (Protocol.md §5.1): paths hold them so already, and object keys
    /// and a file's storage path given in another spelling are taken in NFC.
    public static func make(body: RecordBody, clock: UInt64, signer: PrivateKey) throws -> Record {
        let body = body.withCanonicalKeys()
        try RecordCodec.validate(body)
        let unsigned = RecordCodec.unsignedBytes(author: signer.publicKey, clock: clock, body: body)
        let signature = try signer.sign(signingDomain + unsigned)
        let encoded = RecordCodec.encode(author: signer.publicKey, clock: clock, body: body, signature: signature)
        guard encoded.count <= RecordLimits.maxRecordBytes else {
            throw RecordError.tooLarge(size: encoded.count, limit: RecordLimits.maxRecordBytes)
        }
        return Record(author: signer.publicKey, clock: clock, body: body, signature: signature,
                      encoded: encoded, id: BLAKE2b.digest256(encoded), valuesRespelled: false)
    }

    /// Decodes and verifies a record from untrusted bytes. `verify: false` skips only the
    /// signature check, for callers that verify in parallel batches (`verifySignature()`).
    public static func decode(_ bytes: [UInt8], verify: Bool = true) throws(RecordError) -> Record {
        // A record checked on its way in is stored next, which needs a member or two of a
        // message; one read from the store without a check is read for its values.
        let record = try RecordCodec.decode(bytes, id: nil, holdingMessages: verify)
        if verify && !record.verifySignature() { throw .badSignature }
        return record
    }

    /// `decode(bytes)` for bytes whose BLAKE2b-256 the caller has worked out already (to drop
    /// records it holds before paying for a signature check), so they are not hashed twice.
    /// `id` must be that hash: it becomes the record's id unchecked.
    public static func decode(_ bytes: [UInt8], hashedAs id: Digest32) throws(RecordError) -> Record {
        let record = try RecordCodec.decode(bytes, id: id, holdingMessages: true)
        if !record.verifySignature() { throw .badSignature }
        return record
    }

    /// Checks the signature against the author and the unsigned part of the encoding.
    public func verifySignature() -> Bool {
        author.verify(signature, for: Record.signingDomain + RecordCodec.unsignedBytes(of: encoded))
    }

    init(author: PublicKey, clock: UInt64, body: RecordBody, signature: Signature, encoded: [UInt8], id: Digest32,
         valuesRespelled: Bool) {
        fields = Fields(author: author, clock: clock, body: body, signature: signature, encoded: encoded, id: id,
                        valuesRespelled: valuesRespelled)
    }
}

extension RecordBody {
    /// This body with every object key of a write's values, and a file entry's storage path, in
    /// NFC. A write's paths are NFC already (`Path`).
    func withCanonicalKeys() -> RecordBody {
        switch self {
        case let .write(pairs):
            return .write(pairs.map { WritePair(path: $0.path, value: $0.value.withCanonicalKeys()) })
        case let .file(entry):
            return .file(FileEntry(path: entry.path, manifest: entry.manifest))  // the initializer takes it in NFC
        case .manifest, .largeWrite, .groupKey, .sealedWrite, .leave:
            return self
        }
    }
}

/// The total order of writes: clock, then author bytes, then record id. Its 72-byte key sorts
/// bytewise in the same order, so SQLite compares orders as BLOBs.
public struct WriteOrder: Hashable, Sendable, Comparable {
    public let clock: UInt64
    public let author: PublicKey
    public let id: Digest32

    public init(clock: UInt64, author: PublicKey, id: Digest32) {
        self.clock = clock
        self.author = author
        self.id = id
    }

    /// clock (8 bytes big-endian) || author (32) || id (32).
    public var key: [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity(72)
        appendBigEndian(clock, bytes: 8, &out)
        out += author.bytes
        out += id.bytes
        return out
    }

    /// The order of `key`, compared field by field without building the keys (a big-endian
    /// clock sorts as the number does): membership walks compare orders for every sealed write.
    public static func < (a: WriteOrder, b: WriteOrder) -> Bool {
        if a.clock != b.clock { return a.clock < b.clock }
        if a.author != b.author { return a.author.bytes.lexicographicallyPrecedes(b.author.bytes) }
        return a.id.bytes.lexicographicallyPrecedes(b.id.bytes)
    }
}
