import Crypto
import Tree

/// Domain <-> wire conversion for records, and nothing else (Protocol.md §3).
///
///     record   = [version, kind, author, clock, body, signature]   ; CBOR array of 6
///     unsigned = [version, kind, author, clock, body]              ; what is signed
///     write    = [+ [path, value]]                                 ; kind 1
enum RecordCodec {
    /// Size of the trailing signature item: a byte-string head (0x58 0x40) and 64 bytes.
    static let signatureItemBytes = 66

    static func unsignedItems(author: PublicKey, clock: UInt64, body: RecordBody) -> [CBOR] {
        [.unsigned(Record.version), .unsigned(body.kind.rawValue), .bytes(author.bytes), .unsigned(clock), encodeBody(body)]
    }

    static func unsignedBytes(author: PublicKey, clock: UInt64, body: RecordBody) -> [UInt8] {
        CBOR.array(unsignedItems(author: author, clock: clock, body: body)).encoded()
    }

    /// The unsigned encoding recovered from a full one: the 6-item array head becomes a 5-item
    /// head and the signature item is dropped. Valid because the signature is always last and
    /// always 66 bytes.
    static func unsignedBytes(of encoded: [UInt8]) -> [UInt8] {
        [0x85] + encoded[1..<(encoded.count - signatureItemBytes)]
    }

    static func encode(author: PublicKey, clock: UInt64, body: RecordBody, signature: Signature) -> [UInt8] {
        CBOR.array(unsignedItems(author: author, clock: clock, body: body) + [.bytes(signature.bytes)]).encoded()
    }

    static func encodeBody(_ body: RecordBody) -> CBOR {
        switch body {
        case let .write(pairs):
            return .array(pairs.map { .array([.text($0.path.storageKey), TreeValueCodec.encode($0.value)]) })
        case let .manifest(manifest):
            return encode(manifest)
        case let .file(file):
            return encode(file)
        case let .largeWrite(write):
            return encode(write)
        case let .groupKey(key):
            return PrivateBodies.encode(key)
        case let .sealedWrite(write):
            return PrivateBodies.encode(write)
        case let .leave(leave):
            return PrivateBodies.encode(leave)
        }
    }

    /// Checks the rules of a body that the type system does not: for a write, 1...maxPairs
    /// pairs, paths strictly increasing by storage key, none an ancestor of another.
    static func validate(_ body: RecordBody) throws(RecordError) {
        switch body {
        case let .manifest(manifest):
            try manifest.validate()
        case let .file(file):
            try file.validate()
        case let .largeWrite(write):
            try write.validate()
        case let .write(pairs):
            try validateWrite(pairs, order: .ofPaths)
        case let .groupKey(key):
            try key.validate()
        case let .sealedWrite(write):
            try write.validate()
        case let .leave(leave):
            try leave.validate()
        }
    }

    /// Where the order rule of a write's paths (strictly increasing, bytewise) is checked.
    enum PairOrder {
        /// On the pairs' paths (NFC, as `Path` holds them): for a write about to be encoded.
        case ofPaths
        /// On the paths as a record spells them, already checked while decoding: the reason they
        /// are out of order, or nil.
        case asWritten(disorder: String?)
    }

    /// The rules of a write's pairs: 1...maxPairs of them, in order (`order`), no two paths the
    /// same and none an ancestor of another once their keys are in NFC.
    ///
    /// Why a record whose paths meet only in NFC ("/k/e\u{301}" and "/k/\u{E9}/x") is refused
    /// rather than given an order for its pairs: the pairs of one write share one write order, so
    /// they only have a meaning as a whole if they touch disjoint subtrees; §3.4 refuses the same
    /// clash between two keys of one object; and no writer that takes keys in NFC, as writers
    /// must, can produce it.
    static func validateWrite(_ pairs: [WritePair], order: PairOrder, maxPairs: Int = RecordLimits.maxPairs) throws(RecordError) {
        guard !pairs.isEmpty else { throw .invalidBody("a write needs at least one pair") }
        guard pairs.count <= maxPairs else {
            throw .invalidBody("\(pairs.count) pairs exceed the limit of \(maxPairs)")
        }
        // A single pair (nearly every write) has no order or ancestry to check.
        guard pairs.count > 1 else { return }
        switch order {
        case .ofPaths:
            for (a, b) in zip(pairs, pairs.dropFirst()) {
                guard Array(a.path.storageKey.utf8).lexicographicallyPrecedes(Array(b.path.storageKey.utf8)) else {
                    throw .invalidBody("paths not in strictly increasing order: \(a.path) then \(b.path)")
                }
            }
        case let .asWritten(disorder):
            if let disorder { throw .invalidBody(disorder) }
        }
        try checkDisjoint(pairs.map(\.path))
    }

    /// No two of `paths` (NFC, as `Path` holds them) are equal, and none is an ancestor of another
    /// but across a zone's root (Protocol.md §3.4): a path outside the protected zones may lie
    /// above one inside a zone. Writers need that: a set of `/conversations/c` that carries
    /// messages, or clears the writer's own, is split into a pair at `/conversations/c` and one
    /// at each message (§5.4). Such pairs never act on each other (an open pair leaves zones
    /// alone; a zone folds only its own pairs), so a record's pairs still fold alike in any order.
    static func checkDisjoint(_ pathList: [Path]) throws(RecordError) {
        guard pathList.count > 1 else { return }
        // Sorted bytewise, a path's descendants directly follow it, so checking neighbours is
        // not enough only when a sibling sorts in between ("/a", "/a b", "/a/c"); check all
        // ancestors against a set instead. (NFC paths can also sort otherwise than as written.)
        var paths = Set<Path>(minimumCapacity: pathList.count)
        for path in pathList where !paths.insert(path).inserted {
            throw .invalidBody("two paths are \(path) once their keys are in NFC")
        }
        for path in pathList {
            for ancestor in path.ancestors where paths.contains(ancestor) {
                if Zone.pairsMayNest(ancestor, above: path) { continue }
                throw .invalidBody("\(ancestor) is an ancestor of \(path) in the same zone of the write")
            }
        }
    }

    static func decode(_ bytes: [UInt8]) throws(RecordError) -> Record {
        try decode(bytes, id: nil)
    }

    /// `id`, when given, is BLAKE2b-256 of `bytes` as the caller computed it. `holdingMessages`:
    /// a message's value is checked and left in its bytes (`WritePair`) rather than built.
    static func decode(_ bytes: [UInt8], id: Digest32?, holdingMessages: Bool = false) throws(RecordError) -> Record {
        guard bytes.count <= RecordLimits.maxRecordBytes else {
            throw .tooLarge(size: bytes.count, limit: RecordLimits.maxRecordBytes)
        }
        if let record = OnePairWriteReader.record(bytes, id: id, holdingMessages: holdingMessages) { return record }
        return try decodeItems(bytes, id: id)
    }

    /// `decode` the general way, through the CBOR item tree: every kind and shape of record, and
    /// the reason for every refusal.
    static func decodeItems(_ bytes: [UInt8], id: Digest32?) throws(RecordError) -> Record {
        let item: CBOR
        do { item = try CBORDecoder.decode(bytes, limits: RecordLimits.cbor) } catch { throw .malformed(error) }
        guard case let .array(fields) = item, fields.count == 6 else {
            throw .invalidField("a record is an array of 6 items")
        }
        guard case let .unsigned(version) = fields[0] else { throw .invalidField("version is not an unsigned integer") }
        guard version == Record.version else { throw .unsupportedVersion(version) }
        guard case let .unsigned(kindNumber) = fields[1] else { throw .invalidField("kind is not an unsigned integer") }
        guard let kind = RecordKind(rawValue: kindNumber) else { throw .unknownKind(kindNumber) }
        guard case let .bytes(authorBytes) = fields[2], let author = try? PublicKey(bytes: authorBytes) else {
            throw .invalidField("author is not a 32-byte string")
        }
        guard case let .unsigned(clock) = fields[3] else { throw .invalidField("clock is not an unsigned integer") }
        guard case let .bytes(signatureBytes) = fields[5], let signature = try? Signature(bytes: signatureBytes) else {
            throw .invalidField("signature is not a 64-byte string")
        }
        let body: RecordBody
        var valuesRespelled = false
        switch kind {
        case .write:
            let (pairs, disorder) = try decodeWrite(fields[4], valuesRespelled: &valuesRespelled)
            try validateWrite(pairs, order: .asWritten(disorder: disorder))
            body = .write(pairs)
        case .manifest:
            body = .manifest(try decodeManifest(fields[4]))
            try validate(body)
        case .file:
            body = .file(try decodeFile(fields[4]))
            try validate(body)
        case .largeWrite:
            body = .largeWrite(try decodeLargeWrite(fields[4]))
            try validate(body)
        case .groupKey:
            body = .groupKey(try PrivateBodies.decodeGroupKey(fields[4]))
            try validate(body)
        case .sealedWrite:
            body = .sealedWrite(try PrivateBodies.decodeSealedWrite(fields[4]))
            try validate(body)
        case .leave:
            body = .leave(try PrivateBodies.decodeLeave(fields[4]))
            try validate(body)
        }
        assert(id == nil || id == BLAKE2b.digest256(bytes), "the id given is not the hash of the bytes")
        return Record(author: author, clock: clock, body: body, signature: signature,
                      encoded: bytes, id: id ?? BLAKE2b.digest256(bytes), valuesRespelled: valuesRespelled)
    }

    /// The pairs of a write as the tree reads them: every key of every path and of every object
    /// inside a value in NFC (Protocol.md §5.1), while the order rule (§3.4) is checked on the
    /// paths as written. `valuesRespelled` is set when a value's object keys were not all NFC.
    /// Also returns why the paths as written are out of order, if they are, for `validateWrite`.
    static func decodeWrite(_ item: CBOR, valuesRespelled: inout Bool) throws(RecordError) -> (pairs: [WritePair], disorder: String?) {
        guard case let .array(items) = item else { throw .invalidBody("a write body is an array of pairs") }
        var pairs = [WritePair]()
        pairs.reserveCapacity(items.count)
        var previous: String?
        var unordered: (String, String)?  // reported once every pair has decoded, as `validate` would
        for item in items {
            guard case let .array(pair) = item, pair.count == 2, case let .text(pathText) = pair[0] else {
                throw .invalidBody("a pair is an array of a text path and a value")
            }
            if let previous, unordered == nil, !previous.utf8.lexicographicallyPrecedes(pathText.utf8) {
                unordered = (previous, pathText)
            }
            previous = pathText
            let path: Path
            do { path = try Path(storageKey: pathText) } catch { throw .invalidPath("\(error)") }
            pairs.append(WritePair(path: path, value: try TreeValueCodec.decode(pair[1], at: path, respelled: &valuesRespelled)))
        }
        return (pairs, unordered.map { "paths not in strictly increasing order: \($0.0) then \($0.1)" })
    }
}
