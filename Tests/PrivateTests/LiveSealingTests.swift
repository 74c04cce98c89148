import Crypto
import Private
import Testing
import TestSupport
import Tree
import Wire

/// Live values of private conversations (Protocol.md §11.8): sealed so that only holders of the
/// epoch key read them, signed so that every node refuses a forgery, and padded so that a
/// typing flag and a receipt look alike.
@Suite("Private: sealed live values")
struct LiveSealingTests {
    static let conversation = "g_T5KaZYt0FsyKl6n6c963"
    static let epoch = try! Digest32(bytes: [UInt8](repeating: 0x47, count: 32))
    static let key = try! EpochKey(bytes: [UInt8](repeating: 0x11, count: 32))
    static let instance: [UInt8] = [0, 1, 2, 3, 4, 5, 6, 7]

    static func sealed(_ author: PrivateKey, _ kind: String, _ value: JSONValue, version: UInt64 = 7, key: EpochKey = key,
                       conversation: String = conversation) throws -> LiveValue {
        let path = try Path(segments: ["conversations", conversation, kind, author.publicKey.userID])
        let plain = try LiveValue.signed(by: author, instance: instance, version: version, path: path, value: value)
        return try LiveSealing.seal(plain, by: author, epoch: epoch, key: key)
    }

    @Test("a member opens a typing flag and a receipt; both are one size; every node checks the signature")
    func roundTrip() throws {
        let author = PrivateKey()
        let typing = try Self.sealed(author, "typingIndicator", true)
        let receipt = try Self.sealed(author, "readReceipts", "-NmessageKey0000001a", version: 8)
        for value in [typing, receipt] {
            let wire = value.encoded()
            guard case let .sealed(form) = try LiveMessage.decode(wire) else { Issue.record("not sealed"); return }
            let opened = try LiveSealing.open(form, key: Self.key)
            #expect(opened.path == value.path && opened.value == value.value && opened.author == author.publicKey)
            #expect(opened.encoded() == wire)
            #expect(!String(decoding: wire, as: UTF8.self).contains("typingIndicator"))
            #expect(!String(decoding: wire, as: UTF8.self).contains("readReceipts"))
            #expect(!String(decoding: wire, as: UTF8.self).contains("NmessageKey"))
        }
        #expect(typing.encoded().count == receipt.encoded().count)
        // The largest value a live value may hold still seals, in the larger bucket, within a datagram.
        let large = try Self.sealed(author, "typingIndicator", .string(String(repeating: "x", count: LiveValue.maxValueBytes - 2)))
        #expect(large.sealed?.ciphertext.count == 616 && large.encoded().count <= LiveValue.maxEncodedBytes)
    }

    @Test("a changed byte, another key, another author or another conversation: refused")
    func tampering() throws {
        let author = PrivateKey(), other = PrivateKey()
        let value = try Self.sealed(author, "readReceipts", "-Nsecret")
        let form = try #require(value.sealed)
        // Any byte changed: the signature fails, for members and relays alike.
        var wire = value.encoded()
        for index in [5, 60, wire.count - 100, wire.count - 1] {
            var changed = wire
            changed[index] ^= 1
            #expect(throws: LiveValueError.self) { try LiveMessage.decode(changed) }
        }
        // Another key does not open it.
        #expect(throws: PrivateError.undecryptable) { try LiveSealing.open(form, key: EpochKey()) }
        // Its ciphertext signed again by another member (to pass it off as theirs) does not open:
        // the author is bound in the associated data.
        let stolen = try SealedLive.signed(by: other, instance: form.instance, version: form.version, conversation: form.conversation,
                                           epoch: form.epoch, ciphertext: form.ciphertext)
        #expect(throws: PrivateError.undecryptable) { try LiveSealing.open(stolen, key: Self.key) }
        // Nor under another version or epoch.
        let moved = try SealedLive.signed(by: author, instance: form.instance, version: form.version + 1, conversation: form.conversation,
                                          epoch: form.epoch, ciphertext: form.ciphertext)
        #expect(throws: PrivateError.undecryptable) { try LiveSealing.open(moved, key: Self.key) }
        // A ciphertext of no bucket's size, or a conversation id that is not private, does not decode.
        wire = try SealedLive.signed(by: author, instance: form.instance, version: 1, conversation: form.conversation, epoch: form.epoch,
                                     ciphertext: form.ciphertext).encoded()
        #expect(throws: LiveValueError.self) {
            try SealedLive.signed(by: author, instance: form.instance, version: 1, conversation: form.conversation, epoch: form.epoch,
                                  ciphertext: Array(form.ciphertext.dropLast()))
        }
        // Sealing someone else's value, a status, or a public conversation's value is refused.
        let public_ = try LiveValue.signed(by: author, instance: Self.instance, version: 1,
                                           path: Path("/conversations/general/typingIndicator/\(author.publicKey.userID)"), value: true)
        #expect(throws: PrivateError.self) { try LiveSealing.seal(public_, by: author, epoch: Self.epoch, key: Self.key) }
        let status = try LiveValue.signed(by: author, instance: Self.instance, version: 1, path: Path("/status/\(author.publicKey.userID)/away"),
                                          value: true)
        #expect(throws: PrivateError.self) { try LiveSealing.seal(status, by: author, epoch: Self.epoch, key: Self.key) }
        let plain = try LiveValue.signed(by: author, instance: Self.instance, version: 1,
                                         path: Path("/conversations/\(Self.conversation)/typingIndicator/\(author.publicKey.userID)"), value: true)
        #expect(throws: PrivateError.self) { try LiveSealing.seal(plain, by: other, epoch: Self.epoch, key: Self.key) }
    }

    @Test("Protocol.md's sealed live value vector")
    func vector() throws {
        let vectors = try ProtocolVectors.of(kind: "sealed-live")
        #expect(vectors.count == 1)
        for v in vectors {
            let author = try PrivateKey(seedBytes: Hex.decode(v["seed"]!)!)
            let path = try Path(v["path"]!)
            let value = try JSONValue.parse(Array(v["value"]!.utf8))
            let plain = try LiveValue.signed(by: author, instance: Hex.decode(v["instance"]!)!, version: UInt64(v["version"]!)!,
                                             path: path, value: value)
            let epoch = try Digest32(bytes: Hex.decode(v["epoch-id"]!)!)
            let key = try EpochKey(bytes: Hex.decode(v["epoch-key"]!)!)
            let sealed = try LiveSealing.seal(plain, by: author, epoch: epoch, key: key, nonce: Hex.decode(v["nonce"]!)!)
            if PrivateVectorTests.printing { print("live: \(Hex.encode(sealed.encoded()))") }
            #expect(Hex.encode(sealed.encoded()) == v["live"]!)
            guard case let .sealed(form) = try LiveMessage.decode(Hex.decode(v["live"]!)!) else { Issue.record("not sealed"); continue }
            let opened = try LiveSealing.open(form, key: key)
            #expect(opened.path == path && opened.value == value)
            #expect(form.conversation == v["conversation"]!)
        }
    }
}
