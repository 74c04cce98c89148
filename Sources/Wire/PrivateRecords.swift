import Crypto
import Tree

/// Bounds on the records of private conversations (Protocol.md §11).
public enum PrivateLimits {
    /// Most sealed keys in one key record: the members' devices of one epoch.
    public static let maxBoxes = 1_000
    /// Highest epoch number of a key record. With one key record counting per author and
    /// epoch number (Protocol.md §11.5), it bounds the key records of a conversation that a
    /// member's node resolves and keeps opened: a group changing its members every day lasts
    /// over ten years; a creator flooding key records gains nothing past it.
    public static let maxEpoch: UInt64 = 4_096
    /// A conversation id: a prefix ("g_" or "d_") and 20 base64url characters.
    public static let conversationIDBytes = 22
    /// The salt of a group key record: random bytes that make the group id (for a direct
    /// conversation, the other member's public key instead).
    public static let saltBytes = 32
    /// A sealed key: the 32-byte epoch key in a sealed box.
    public static let boxBytes = 32 + SealedBox.overheadByteCount
    /// Smallest sealed payload: an XChaCha20-Poly1305 nonce and tag around at least one block.
    public static let minSealedBytes = XChaChaPoly.nonceByteCount + XChaChaPoly.tagByteCount + 1
}

/// A key record (kind 5): the group key of one epoch of a private conversation, sealed to each
/// member's device key, and the epoch's member list and title sealed under that key. Only the
/// conversation's creator (or, for a direct conversation, one of its two members) can make one
/// that counts, which every node can check from `salt` and `conversation` alone.
public struct GroupKeyBody: Hashable, Sendable {
    public let conversation: String
    /// 1 for the first epoch; each membership change makes the next one.
    public let epoch: UInt64
    public let salt: [UInt8]
    /// Sealed boxes of the epoch key, sorted bytewise (so their order reveals no member).
    public let boxes: [[UInt8]]
    /// nonce || XChaCha20-Poly1305(epoch key, meta) (Protocol.md §11.3).
    public let meta: [UInt8]

    public init(conversation: String, epoch: UInt64, salt: [UInt8], boxes: [[UInt8]], meta: [UInt8]) {
        self.conversation = conversation
        self.epoch = epoch
        self.salt = salt
        self.boxes = boxes.sorted { $0.lexicographicallyPrecedes($1) }
        self.meta = meta
    }

    func validate() throws(RecordError) {
        try PrivateBodies.validate(conversation: conversation)
        guard (1...PrivateLimits.maxEpoch).contains(epoch) else {
            throw .invalidBody("a key record's epoch is 1...\(PrivateLimits.maxEpoch)")
        }
        guard salt.count == PrivateLimits.saltBytes else { throw .invalidBody("a key record's salt is \(PrivateLimits.saltBytes) bytes") }
        guard (1...PrivateLimits.maxBoxes).contains(boxes.count) else {
            throw .invalidBody("a key record holds 1...\(PrivateLimits.maxBoxes) sealed keys")
        }
        guard boxes.allSatisfy({ $0.count == PrivateLimits.boxBytes }) else {
            throw .invalidBody("a sealed key is \(PrivateLimits.boxBytes) bytes")
        }
        for (a, b) in zip(boxes, boxes.dropFirst()) where !a.lexicographicallyPrecedes(b) {
            throw .invalidBody("sealed keys not in strictly increasing order")
        }
        guard meta.count >= PrivateLimits.minSealedBytes else { throw .invalidBody("a key record's meta is too short") }
    }
}

/// A sealed write (kind 6): a write (kind 1 pairs) encrypted under one epoch's key. Every node
/// stores, verifies and relays it; only nodes holding the epoch key see its pairs.
public struct SealedWriteBody: Hashable, Sendable {
    public let conversation: String
    /// The record id of the key record whose epoch key sealed it.
    public let epoch: Digest32
    /// nonce || XChaCha20-Poly1305(epoch key, padded write body).
    public let ciphertext: [UInt8]

    public init(conversation: String, epoch: Digest32, ciphertext: [UInt8]) {
        self.conversation = conversation
        self.epoch = epoch
        self.ciphertext = ciphertext
    }

    func validate() throws(RecordError) {
        try PrivateBodies.validate(conversation: conversation)
        guard ciphertext.count >= PrivateLimits.minSealedBytes else { throw .invalidBody("a sealed write's ciphertext is too short") }
    }
}

/// A leave record (kind 7): its author stops being a member of the conversation from the
/// record's clock on. Plain, so the creator's node learns of it and makes a new epoch.
public struct LeaveBody: Hashable, Sendable {
    public let conversation: String

    public init(conversation: String) { self.conversation = conversation }

    func validate() throws(RecordError) { try PrivateBodies.validate(conversation: conversation) }
}

/// Encoding of the private bodies and of a write body on its own (the plaintext of a sealed
/// write), for the Private module.
public enum PrivateBodies {
    /// "g_" or "d_" and 20 base64url characters.
    public static func validate(conversation: String) throws(RecordError) {
        guard isConversationID(conversation) else {
            throw .invalidBody("a private conversation id is g_ or d_ and 20 base64url characters")
        }
    }

    /// The rule of `validate(conversation:)`, read from the UTF-8 in place: every pair a node
    /// stores is asked whether it lands in a private conversation, so this runs once per message
    /// of a sync, and copying the bytes out and comparing prefixes as text cost some 600
    /// instructions each time. (Bytes all ASCII after a two-byte ASCII prefix make the same
    /// decision as the text prefix.)
    public static func isConversationID(_ conversation: String) -> Bool {
        let utf8 = conversation.utf8
        guard utf8.count == PrivateLimits.conversationIDBytes else { return false }
        var bytes = utf8.makeIterator()
        guard let kind = bytes.next(), kind == UInt8(ascii: "g") || kind == UInt8(ascii: "d"),
              bytes.next() == UInt8(ascii: "_") else { return false }
        while let byte = bytes.next() { guard isBase64URL(byte) else { return false } }
        return true
    }

    static func isBase64URL(_ c: UInt8) -> Bool {
        (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || (c >= 0x30 && c <= 0x39) || c == 0x2D || c == 0x5F
    }

    static func encode(_ key: GroupKeyBody) -> CBOR {
        .array([.text(key.conversation), .unsigned(key.epoch), .bytes(key.salt), .array(key.boxes.map { .bytes($0) }), .bytes(key.meta)])
    }

    static func encode(_ write: SealedWriteBody) -> CBOR {
        .array([.text(write.conversation), .bytes(write.epoch.bytes), .bytes(write.ciphertext)])
    }

    static func encode(_ leave: LeaveBody) -> CBOR { .array([.text(leave.conversation)]) }

    static func decodeGroupKey(_ item: CBOR) throws(RecordError) -> GroupKeyBody {
        guard case let .array(f) = item, f.count == 5, case let .text(cid) = f[0], case let .unsigned(epoch) = f[1],
              case let .bytes(salt) = f[2], case let .array(boxItems) = f[3], case let .bytes(meta) = f[4] else {
            throw .invalidBody("a key record is [conversation, epoch, salt, [sealed keys], meta]")
        }
        var boxes = [[UInt8]]()
        boxes.reserveCapacity(boxItems.count)
        for item in boxItems {
            guard case let .bytes(box) = item else { throw .invalidBody("a sealed key is a byte string") }
            boxes.append(box)
        }
        for (a, b) in zip(boxes, boxes.dropFirst()) where !a.lexicographicallyPrecedes(b) {
            throw .invalidBody("sealed keys not in strictly increasing order")
        }
        return GroupKeyBody(conversation: cid, epoch: epoch, salt: salt, boxes: boxes, meta: meta)
    }

    static func decodeSealedWrite(_ item: CBOR) throws(RecordError) -> SealedWriteBody {
        guard case let .array(f) = item, f.count == 3, case let .text(cid) = f[0], case let .bytes(epoch) = f[1],
              let digest = try? Digest32(bytes: epoch), case let .bytes(ciphertext) = f[2] else {
            throw .invalidBody("a sealed write is [conversation, epoch id, ciphertext]")
        }
        return SealedWriteBody(conversation: cid, epoch: digest, ciphertext: ciphertext)
    }

    static func decodeLeave(_ item: CBOR) throws(RecordError) -> LeaveBody {
        guard case let .array(f) = item, f.count == 1, case let .text(cid) = f[0] else {
            throw .invalidBody("a leave record is [conversation]")
        }
        return LeaveBody(conversation: cid)
    }

    /// The canonical bytes of a write body (`[+ [path, value]]`, Protocol.md §3.1), checked by
    /// the write rules of §3.4.
    public static func encodeWrite(_ pairs: [WritePair]) throws(RecordError) -> [UInt8] {
        let body = RecordBody.write(pairs).withCanonicalKeys()
        try RecordCodec.validate(body)
        return RecordCodec.encodeBody(body).encoded()
    }

    /// The pairs of a write body decoded from untrusted bytes, with every rule a kind-1 record's
    /// body obeys, and each value's canonical encoding (for the zones' store).
    public static func decodeWrite(_ bytes: [UInt8]) throws(RecordError) -> [WritePair] {
        try decodeWriteAndValueBytes(bytes).pairs
    }

    /// `decodeWrite`, with each pair's value as canonical CBOR (what `TreeValueCodec.encode`
    /// gives), for the zones' store.
    ///
    /// Why: the decoder takes only canonical forms, so a value's bytes inside the body are its
    /// encoding, unless an object key is spelled otherwise than in NFC (then it is encoded
    /// afresh). A member's node folds every sealed write it opens, tens of thousands in a cold
    /// sync: slicing costs a short scan, encoding builds and writes a CBOR tree per pair.
    ///
    /// A write of one pair (nearly every sealed write: a message) is read straight from its bytes
    /// (`OnePairWriteReader.writeBody`), a message's value left in them as a plain record's is
    /// when it is stored; anything else, and the reason for every refusal, the general way.
    public static func decodeWriteAndValueBytes(_ bytes: [UInt8]) throws(RecordError)
        -> (pairs: [WritePair], valueBytes: [ArraySlice<UInt8>]) {
        guard bytes.count <= RecordLimits.maxRecordBytes else {
            throw .tooLarge(size: bytes.count, limit: RecordLimits.maxRecordBytes)
        }
        if let (pair, valueBytes) = OnePairWriteReader.writeBody(bytes) { return ([pair], [valueBytes]) }
        return try decodeWriteItems(bytes)
    }

    /// `decodeWriteAndValueBytes` through the CBOR item tree: every shape of write body, and the
    /// reason for every refusal. What the direct reader accepts, this accepts alike.
    public static func decodeWriteItems(_ bytes: [UInt8]) throws(RecordError) -> (pairs: [WritePair], valueBytes: [ArraySlice<UInt8>]) {
        let item: CBOR
        do { item = try CBORDecoder.decode(bytes, limits: RecordLimits.cbor) } catch { throw .malformed(error) }
        var respelled = false
        let (pairs, disorder) = try RecordCodec.decodeWrite(item, valuesRespelled: &respelled)
        try RecordCodec.validateWrite(pairs, order: .asWritten(disorder: disorder))
        if respelled { return (pairs, pairs.map { TreeValueCodec.encode($0.value).encoded()[...] }) }
        var scanner = CanonicalScanner(bytes: bytes[...], offset: 0)
        return (pairs, scanner.pairValues(count: pairs.count))
    }
}

extension Record {
    /// The private conversation a key, sealed write or leave record belongs to; nil for others.
    public var privateConversationID: String? {
        switch body {
        case let .groupKey(b): return b.conversation
        case let .sealedWrite(b): return b.conversation
        case let .leave(b): return b.conversation
        case .write, .manifest, .file, .largeWrite: return nil
        }
    }
}
