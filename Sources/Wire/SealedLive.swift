import Crypto
import Tree

/// A live value of a private conversation (Protocol.md §5.7, §11.8): a typing flag or a read
/// receipt sealed under the conversation's epoch key, so that only members read it, and signed
/// over the sealed form, so that every node (members or not) can check who sent it, refuse a
/// forgery and relay it to members it cannot reach otherwise.
///
///     sealed-live = [author:bstr32, instance:bstr8, version:uint, conversation:tstr,
///                    epoch-id:bstr32, ciphertext:bstr, signature:bstr64]
///     signed      = "lanchat/sealed-live/v1" || 00 || CBOR(the first six fields)
///
/// A non-member learns the author, the conversation id, the version (the author's clock) and
/// the size bucket: not whether it is a typing flag or a receipt, nor its value.
public struct SealedLive: Hashable, Sendable {
    public let author: PublicKey
    public let instance: [UInt8]
    public let version: UInt64
    public let conversation: String
    /// The record id of the key record whose key sealed it.
    public let epoch: Digest32
    /// nonce || XChaCha20-Poly1305 of the padded plaintext (`LiveSealing` in Private).
    public let ciphertext: [UInt8]
    public let signature: Signature

    public static let signingDomain: [UInt8] = Array("lanchat/sealed-live/v1".utf8) + [0]
    /// The sizes a plaintext is padded to: one for every typing flag and receipt a chat app
    /// writes, one for the largest value a live value may hold (`LiveValue.maxValueBytes`).
    public static let buckets = [64, 576]
    /// The ciphertext sizes that follow: a 24-byte nonce and a 16-byte tag around a bucket.
    public static let ciphertextSizes = buckets.map { $0 + 40 }

    /// Signs a sealed form made by `LiveSealing`.
    public static func signed(by key: PrivateKey, instance: [UInt8], version: UInt64, conversation: String, epoch: Digest32,
                              ciphertext: [UInt8]) throws -> SealedLive {
        guard instance.count == Beacon.instanceByteCount else { throw LiveValueError.invalid("instance is not 8 bytes") }
        guard ciphertextSizes.contains(ciphertext.count) else { throw LiveValueError.invalid("ciphertext of \(ciphertext.count) bytes") }
        let unsigned = unsignedItem(author: key.publicKey, instance: instance, version: version, conversation: conversation,
                                    epoch: epoch, ciphertext: ciphertext)
        let signature = try key.sign(signingDomain + unsigned.encoded())
        return SealedLive(author: key.publicKey, instance: instance, version: version, conversation: conversation, epoch: epoch,
                          ciphertext: ciphertext, signature: signature)
    }

    private init(author: PublicKey, instance: [UInt8], version: UInt64, conversation: String, epoch: Digest32,
                 ciphertext: [UInt8], signature: Signature) {
        self.author = author
        self.instance = instance
        self.version = version
        self.conversation = conversation
        self.epoch = epoch
        self.ciphertext = ciphertext
        self.signature = signature
    }

    private static func unsignedItem(author: PublicKey, instance: [UInt8], version: UInt64, conversation: String,
                                     epoch: Digest32, ciphertext: [UInt8]) -> CBOR {
        .array([.bytes(author.bytes), .bytes(instance), .unsigned(version), .text(conversation), .bytes(epoch.bytes), .bytes(ciphertext)])
    }

    public func encoded() -> [UInt8] {
        CBOR.array([.bytes(author.bytes), .bytes(instance), .unsigned(version), .text(conversation), .bytes(epoch.bytes),
                    .bytes(ciphertext), .bytes(signature.bytes)]).encoded()
    }

    /// Decodes and verifies: strict CBOR, a private conversation id, a ciphertext of one of the
    /// bucket sizes, and the author's signature. Whether it opens is for members to find out.
    public static func decode(_ bytes: [UInt8]) throws(LiveValueError) -> SealedLive {
        guard bytes.count <= LiveValue.maxEncodedBytes else { throw .tooLarge("live value of \(bytes.count) bytes exceeds \(LiveValue.maxEncodedBytes)") }
        let item: CBOR
        do { item = try CBORDecoder.decode(bytes, limits: CBORLimits(maxDepth: 2, maxItems: 9)) } catch {
            throw .invalid("\(error)")
        }
        guard case let .array(fields) = item, fields.count == 7,
              case let .bytes(authorBytes) = fields[0], let author = try? PublicKey(bytes: authorBytes),
              case let .bytes(instance) = fields[1], instance.count == Beacon.instanceByteCount,
              case let .unsigned(version) = fields[2],
              case let .text(conversation) = fields[3],
              case let .bytes(epochBytes) = fields[4], let epoch = try? Digest32(bytes: epochBytes),
              case let .bytes(ciphertext) = fields[5],
              case let .bytes(signatureBytes) = fields[6], let signature = try? Signature(bytes: signatureBytes)
        else { throw .invalid("not [author, instance, version, conversation, epoch-id, ciphertext, signature]") }
        do { try PrivateBodies.validate(conversation: conversation) } catch { throw .invalid("conversation: \(error)") }
        guard ciphertextSizes.contains(ciphertext.count) else { throw .invalid("ciphertext of \(ciphertext.count) bytes is no bucket's") }
        let unsigned = unsignedItem(author: author, instance: instance, version: version, conversation: conversation,
                                    epoch: epoch, ciphertext: ciphertext)
        guard author.verify(signature, for: signingDomain + unsigned.encoded()) else { throw .badSignature }
        return SealedLive(author: author, instance: instance, version: version, conversation: conversation, epoch: epoch,
                          ciphertext: ciphertext, signature: signature)
    }
}

/// A live value as it travels (in a `live` datagram or session message 9): plain, or sealed
/// for a private conversation's members. The two are told apart by their array's length.
public enum LiveMessage: Sendable {
    case plain(LiveValue)
    case sealed(SealedLive)

    public static func decode(_ bytes: [UInt8]) throws(LiveValueError) -> LiveMessage {
        if bytes.first == 0x87 { return .sealed(try SealedLive.decode(bytes)) }
        return .plain(try LiveValue.decode(bytes))
    }
}
