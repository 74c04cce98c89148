import Crypto
import Foundation
import Private
import Testing
import TestSupport
import Tree
import Wire

/// Protocol.md's vectors of private conversations (§10, §11): a key record and a sealed write,
/// rebuilt from their inputs (a sealed box's ephemeral key is random, so the boxes are taken
/// from the record and opened instead of rebuilt).
@Suite("Protocol.md private vectors")
struct PrivateVectorTests {
    static var printing: Bool { ProcessInfo.processInfo.environment["LANCHAT_PRINT_VECTORS"] != nil }

    static func key(_ vector: [String: String], _ field: String) throws -> PrivateKey {
        try PrivateKey(seedBytes: Hex.decode(vector[field]!)!)
    }

    @Test("key record vector: ids, the box a member opens, the meta, the signed bytes")
    func keyRecord() throws {
        let vectors = try ProtocolVectors.of(kind: "private-key-record")
        #expect(vectors.count == 1)
        for v in vectors {
            let creator = try Self.key(v, "seed"), member = try Self.key(v, "member-seed"), outsider = try PrivateKey(seedBytes: [UInt8](repeating: 3, count: 32))
            let salt = Hex.decode(v["salt"]!)!
            let conversation = ConversationID.group(creator: creator.publicKey, salt: salt)
            let direct = ConversationID.direct(creator.publicKey, member.publicKey)
            let epochKey = try EpochKey(bytes: Hex.decode(v["epoch-key"]!)!)
            let members = try ProtocolVectors.list(v, "members").map { try PublicKey(userID: $0) }
            let meta = GroupMeta(title: v["title"]!, members: members)
            let epoch = UInt64(v["epoch"]!)!
            let clock = UInt64(v["clock"]!)!
            let sealedMeta = KeySchedule.sealMeta(meta, conversation: conversation, epoch: epoch, key: epochKey, author: creator.publicKey,
                                                  nonce: Hex.decode(v["meta-nonce"]!)!)
            if Self.printing {
                let body = KeySchedule.makeKeyBody(conversation: conversation, epoch: epoch, salt: salt, key: epochKey, meta: meta,
                                                   author: creator.publicKey, recipients: [try creator.publicKey.x25519(), try member.publicKey.x25519()],
                                                   nonce: Hex.decode(v["meta-nonce"]!)!)
                let record = try Record.make(body: .groupKey(body), clock: clock, signer: creator)
                print("conversation: \(conversation)\ndirect: \(direct)\nmeta: \(Hex.encode(meta.encoded()))\nrecord: \(Hex.encode(record.encoded))\nid: \(record.id)")
                return
            }
            #expect(conversation == v["conversation"])
            #expect(direct == v["direct"])
            #expect(Hex.encode(meta.encoded()) == v["meta"])
            let record = try Record.decode(Hex.decode(v["record"]!)!)
            #expect(record.id.description == v["id"])
            guard case let .groupKey(body) = record.body else { Issue.record("not a key record"); continue }
            #expect(body.meta == sealedMeta)
            #expect(ConversationID.mayKey(body, author: creator.publicKey))
            #expect(KeySchedule.openKey(body, with: member.x25519())?.copyBytes() == epochKey.copyBytes())
            #expect(KeySchedule.openKey(body, with: outsider.x25519()) == nil)
            #expect(try KeySchedule.openMeta(body, key: epochKey, author: creator.publicKey) == meta)
            let rebuilt = try Record.make(body: .groupKey(GroupKeyBody(conversation: conversation, epoch: epoch, salt: salt, boxes: body.boxes, meta: sealedMeta)),
                                          clock: clock, signer: creator)
            #expect(rebuilt.encoded == record.encoded)
        }
    }

    @Test("sealed write vector: the bytes, the bucket, the pairs a member reads")
    func sealedWrite() throws {
        let vectors = try ProtocolVectors.of(kind: "private-write")
        #expect(vectors.count == 1)
        for v in vectors {
            let author = try Self.key(v, "seed")
            guard case let .array(items) = try JSONValue.parse(v["pairs"]!) else { Issue.record("pairs"); continue }
            let pairs = try items.map { item -> WritePair in
                guard case let .array(pair) = item, case let .string(path) = pair[0] else { throw TreeError.invalidUpdate("pair") }
                let p = try Path(path)
                return WritePair(path: p, value: try pair[1].normalized(at: p))
            }
            let epochKey = try EpochKey(bytes: Hex.decode(v["epoch-key"]!)!)
            let epochID = try Digest32(bytes: Hex.decode(v["epoch-id"]!)!)
            let body = try KeySchedule.sealWrite(pairs, conversation: v["conversation"]!, epoch: epochID, key: epochKey,
                                                 author: author.publicKey, nonce: Hex.decode(v["nonce"]!)!)
            let record = try Record.make(body: .sealedWrite(body), clock: UInt64(v["clock"]!)!, signer: author)
            let plain = try PrivateBodies.encodeWrite(pairs)
            if Self.printing {
                print("plaintext: \(Hex.encode(plain))\npadded-size: \(KeySchedule.bucket(for: plain.count))\nrecord: \(Hex.encode(record.encoded))\nid: \(record.id)")
                return
            }
            #expect(Hex.encode(plain) == v["plaintext"])
            #expect(String(KeySchedule.bucket(for: plain.count)) == v["padded-size"])
            #expect(Hex.encode(record.encoded) == v["record"])
            #expect(record.id.description == v["id"])
            let decoded = try Record.decode(Hex.decode(v["record"]!)!)
            guard case let .sealedWrite(sealed) = decoded.body else { Issue.record("not a sealed write"); continue }
            #expect(try KeySchedule.openWrite(sealed, key: epochKey, author: author.publicKey) == pairs)
            #expect(throws: PrivateError.undecryptable) { try KeySchedule.openWrite(sealed, key: EpochKey(), author: author.publicKey) }
        }
    }
}
