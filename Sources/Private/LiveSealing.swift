import Crypto
import Tree
import Wire

/// Sealing of the live values of private conversations (Protocol.md §11.8): a member's typing
/// flag or read receipt goes out sealed under the conversation's current epoch key, so that
/// only members read it; its signature covers the sealed form, so that every node still checks
/// it and relays it. Pure: bytes and keys in, bytes out.
///
/// The plaintext names only the kind and the value: the conversation travels in the clear
/// (relays need it for nothing but the record of who talks where, which they learn from the
/// records anyway) and the user is the author. So the path is rebuilt from signed fields and a
/// member cannot seal a value for another member's path.
public enum LiveSealing {
    static let label: [UInt8] = Array("lanchat/sealed-live/v1".utf8)

    /// The two kinds a private conversation's live values can be, as the plaintext numbers them.
    enum Kind: UInt64 {
        case typing = 0
        case receipt = 1

        var segment: String { self == .typing ? "typingIndicator" : "readReceipts" }
    }

    /// Associated data: binds the ciphertext to every signed field but the ciphertext itself, so
    /// that it cannot be passed off under another conversation, epoch, author or version.
    static func ad(conversation: String, epoch: Digest32, author: PublicKey, instance: [UInt8], version: UInt64) -> [UInt8] {
        label + [0] + Array(conversation.utf8) + epoch.bytes + author.bytes + instance + SealedFile.bigEndian(version)
    }

    /// The bucket a plaintext of `length` bytes is padded to (one padding byte at least).
    static func bucket(for length: Int) -> Int? { SealedLive.buckets.first { $0 > length } }

    /// `value` sealed under `key` for the members of `value`'s conversation (a typing flag or a
    /// receipt of the signer's, in a private conversation) and signed by `signer`. `nonce` is
    /// for vectors only.
    public static func seal(_ value: LiveValue, by signer: PrivateKey, epoch: Digest32, key: EpochKey,
                            nonce: [UInt8]? = nil) throws -> LiveValue {
        guard let conversation = value.privateConversation, value.author == signer.publicKey,
              let kind = kind(of: value.path, author: value.author) else {
            throw PrivateError.notAllowed("\(value.path) is no live value of the signer in a private conversation")
        }
        let plain = CBOR.array([.unsigned(kind.rawValue), .bytes(value.valueBytes)]).encoded()
        guard let size = bucket(for: plain.count) else { throw PrivateError.notAllowed("a live value of \(plain.count) bytes") }
        let padded = Padding.pad(plain, blockSize: size)
        let ad = ad(conversation: conversation, epoch: epoch, author: value.author, instance: value.instance, version: value.version)
        let subkey = key.subkey(label)
        let sealed = nonce.map { XChaChaPoly.seal(padded, key: subkey, ad: ad, nonce: $0) } ?? XChaChaPoly.seal(padded, key: subkey, ad: ad)
        let form = try SealedLive.signed(by: signer, instance: value.instance, version: value.version, conversation: conversation,
                                         epoch: epoch, ciphertext: sealed)
        return value.withSealed(form)
    }

    /// The value a sealed form holds, given the key of its epoch: the ciphertext opens, the
    /// padding reaches exactly its bucket, the plaintext is `[kind, value]` and the value is a
    /// valid live value at `/conversations/$conversation/<kind>/<author's user id>`.
    public static func open(_ sealed: SealedLive, key: EpochKey) throws(PrivateError) -> LiveValue {
        let ad = ad(conversation: sealed.conversation, epoch: sealed.epoch, author: sealed.author, instance: sealed.instance,
                    version: sealed.version)
        guard let padded = XChaChaPoly.open(sealed.ciphertext, key: key.subkey(label), ad: ad) else { throw .undecryptable }
        guard let plain = Padding.unpad(padded, blockSize: padded.count), bucket(for: plain.count) == padded.count else {
            throw .badPlaintext("not padded to its bucket")
        }
        guard let item = try? CBORDecoder.decode(plain, limits: CBORLimits(maxDepth: 2, maxItems: 3)),
              case let .array(fields) = item, fields.count == 2,
              case let .unsigned(number) = fields[0], let kind = Kind(rawValue: number),
              case let .bytes(valueBytes) = fields[1] else { throw .badPlaintext("not [kind, value]") }
        let path: Path
        do { path = try Path(segments: ["conversations", sealed.conversation, kind.segment, sealed.author.userID]) } catch {
            throw .badPlaintext("\(error)")
        }
        do { return try LiveValue.opened(sealed, path: path, valueBytes: valueBytes) } catch { throw .badPlaintext("\(error)") }
    }

    /// The kind of a live value at `path`, if it is `author`'s typing flag or receipt in a conversation.
    static func kind(of path: Path, author: PublicKey) -> Kind? {
        guard let (kind, owner) = LivePaths.classify(path), owner == author.userID else { return nil }
        switch kind {
        case .typing: return .typing
        case .receipt: return .receipt
        case .status: return nil
        }
    }
}
