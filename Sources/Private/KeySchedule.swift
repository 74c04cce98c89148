import Crypto
import Tree
import Wire

/// One epoch's group key: 32 random bytes, handed to each member in a sealed box.
public final class EpochKey: Sendable {
    public static let byteCount = 32
    let secret: SecretBytes
    /// The write key (`subkey(KeySchedule.writeLabel)`), derived once: a member's node opens
    /// every sealed write of an epoch with it, tens of thousands in a cold sync.
    let writeKey: SecretBytes

    /// A fresh key from libsodium's generator.
    public convenience init() { self.init(secret: SecretBytes(secureRandomBytes(EpochKey.byteCount))) }

    init(secret: SecretBytes) {
        precondition(secret.count == EpochKey.byteCount)
        self.secret = secret
        writeKey = SecretBytes(BLAKE2b.hash(KeySchedule.writeLabel, length: 32, key: secret.copyBytes()))
    }

    /// A key given as bytes (vectors, the interop tool, keys kept by a node).
    public convenience init(bytes: [UInt8]) throws(PrivateError) {
        guard bytes.count == EpochKey.byteCount else { throw .notAllowed("an epoch key is \(EpochKey.byteCount) bytes") }
        self.init(secret: SecretBytes(bytes))
    }

    public func copyBytes() -> [UInt8] { secret.copyBytes() }

    /// BLAKE2b-256 keyed with the epoch key over a label: one key per use, so the meta and the
    /// writes of an epoch never share an XChaCha20-Poly1305 key.
    func subkey(_ label: [UInt8]) -> SecretBytes {
        SecretBytes(BLAKE2b.hash(label, length: 32, key: secret.copyBytes()))
    }
}

/// The key schedule and sealing of private conversations (Protocol.md §11.2-§11.4). Pure: bytes
/// and keys in, bytes out.
///
/// Why no per-message ratchet: a node's tree is rebuilt from its records and the keys it holds
/// (after a crash, a migration, or on a member's second device), and a new member of a group
/// that shares history must read old messages, so every message key must stay derivable from
/// what members keep. Forward secrecy is per epoch instead: every membership change (and any
/// rekey the creator makes) starts an epoch with a fresh random key that earlier keys do not
/// derive.
public enum KeySchedule {
    static let metaLabel: [UInt8] = Array("lanchat/group-meta/v1".utf8)
    static let writeLabel: [UInt8] = Array("lanchat/sealed-write/v1".utf8)

    /// The size a plaintext of `length` bytes is padded to: the smallest of 256, 1 KiB, 4 KiB,
    /// 16 KiB, 64 KiB, 256 KiB above it (one padding byte at least), beyond that the next
    /// multiple of 64 KiB. An observer learns the bucket only.
    public static func bucket(for length: Int) -> Int {
        var size = 256
        while size <= length, size < 256 * 1024 { size *= 4 }
        if size > length { return size }
        return (length / 65536 + 1) * 65536
    }

    /// The block `Padding` pads to for a bucket: the bucket itself, or 64 KiB above 256 KiB.
    static func padBlock(_ bucket: Int) -> Int { bucket > 256 * 1024 ? 65536 : bucket }

    /// Associated data of the meta: binds it to its conversation, epoch number and author.
    static func metaAD(_ conversation: String, epoch: UInt64, author: PublicKey) -> [UInt8] {
        var ad = metaLabel + [0] + Array(conversation.utf8)
        for shift in stride(from: 56, through: 0, by: -8) { ad.append(UInt8(truncatingIfNeeded: epoch >> UInt64(shift))) }
        return ad + author.bytes
    }

    /// Associated data of a sealed write: its conversation, epoch record and author, so a
    /// ciphertext cannot be replayed under another member's name or into another epoch.
    static func writeAD(_ conversation: String, epoch: Digest32, author: PublicKey) -> [UInt8] {
        writeLabel + [0] + Array(conversation.utf8) + epoch.bytes + author.bytes
    }

    /// The body of a key record: `key` sealed to every recipient, `meta` sealed under the key.
    /// `nonce` is for vectors only.
    public static func makeKeyBody(conversation: String, epoch: UInt64, salt: [UInt8], key: EpochKey, meta: GroupMeta,
                                   author: PublicKey, recipients: [X25519PublicKey], nonce: [UInt8]? = nil) -> GroupKeyBody {
        let plain = key.copyBytes()
        let boxes = recipients.map { SealedBox.seal(plain, to: $0) }
        return GroupKeyBody(conversation: conversation, epoch: epoch, salt: salt, boxes: boxes,
                            meta: sealMeta(meta, conversation: conversation, epoch: epoch, key: key, author: author, nonce: nonce))
    }

    /// nonce || XChaCha20-Poly1305(meta key, meta, meta AD). `nonce` is for vectors only.
    public static func sealMeta(_ meta: GroupMeta, conversation: String, epoch: UInt64, key: EpochKey, author: PublicKey,
                                nonce: [UInt8]? = nil) -> [UInt8] {
        let ad = metaAD(conversation, epoch: epoch, author: author)
        return nonce.map { XChaChaPoly.seal(meta.encoded(), key: key.subkey(metaLabel), ad: ad, nonce: $0) }
            ?? XChaChaPoly.seal(meta.encoded(), key: key.subkey(metaLabel), ad: ad)
    }

    /// The epoch key if one of the boxes is sealed to `device`, else nil (not a member).
    public static func openKey(_ body: GroupKeyBody, with device: X25519PrivateKey) -> EpochKey? {
        for box in body.boxes {
            if let secret = SealedBox.open(box, with: device), secret.count == EpochKey.byteCount {
                return EpochKey(secret: secret)
            }
        }
        return nil
    }

    /// The meta of a key record, given its epoch key.
    public static func openMeta(_ body: GroupKeyBody, key: EpochKey, author: PublicKey) throws(PrivateError) -> GroupMeta {
        let ad = metaAD(body.conversation, epoch: body.epoch, author: author)
        guard let plain = XChaChaPoly.open(body.meta, key: key.subkey(metaLabel), ad: ad) else { throw .undecryptable }
        return try GroupMeta.decode(plain)
    }

    /// A sealed write of `pairs`, every one under `/conversations/$conversation`, padded to its
    /// bucket. `nonce` is for vectors only.
    public static func sealWrite(_ pairs: [WritePair], conversation: String, epoch: Digest32, key: EpochKey,
                                 author: PublicKey, nonce: [UInt8]? = nil) throws -> SealedWriteBody {
        try checkInside(pairs, conversation: conversation)
        let plain = try PrivateBodies.encodeWrite(pairs)
        let padded = Padding.pad(plain, blockSize: padBlock(bucket(for: plain.count)))
        let ad = writeAD(conversation, epoch: epoch, author: author)
        let subkey = key.writeKey
        let sealed = nonce.map { XChaChaPoly.seal(padded, key: subkey, ad: ad, nonce: $0) } ?? XChaChaPoly.seal(padded, key: subkey, ad: ad)
        return SealedWriteBody(conversation: conversation, epoch: epoch, ciphertext: sealed)
    }

    /// The pairs of a sealed write, or why they cannot be had. Checks the padding (to a valid
    /// bucket), every rule of a kind-1 body, and that every pair lies in the conversation.
    public static func openWrite(_ body: SealedWriteBody, key: EpochKey, author: PublicKey) throws(PrivateError) -> [WritePair] {
        try openWriteAndValueBytes(body, key: key, author: author).pairs
    }

    /// `openWrite`, with each pair's value as canonical CBOR (`PrivateBodies.decodeWriteAndValueBytes`),
    /// which the zones' store keeps: sliced from the plaintext rather than encoded again.
    public static func openWriteAndValueBytes(_ body: SealedWriteBody, key: EpochKey, author: PublicKey) throws(PrivateError)
        -> (pairs: [WritePair], valueBytes: [ArraySlice<UInt8>]) {
        let ad = writeAD(body.conversation, epoch: body.epoch, author: author)
        guard let padded = XChaChaPoly.open(body.ciphertext, key: key.writeKey, ad: ad) else { throw .undecryptable }
        guard let plain = Padding.unpadAuthenticated(padded, blockSize: padBlock(padded.count)),
              bucket(for: plain.count) == padded.count else {
            throw .badPlaintext("not padded to its bucket")
        }
        let opened: (pairs: [WritePair], valueBytes: [ArraySlice<UInt8>])
        do { opened = try PrivateBodies.decodeWriteAndValueBytes(plain) } catch { throw .badPlaintext("\(error)") }
        try checkInside(opened.pairs, conversation: body.conversation)
        return opened
    }

    /// Every pair at or below `/conversations/$conversation/<something>`: a sealed write can
    /// reach nothing outside its own conversation, nor replace the conversation as a whole.
    static func checkInside(_ pairs: [WritePair], conversation: String) throws(PrivateError) {
        for pair in pairs {
            let s = pair.path.segments
            guard s.count >= 3, s[0] == "conversations", s[1] == conversation else {
                throw .outsideConversation(pair.path.description)
            }
        }
    }
}
