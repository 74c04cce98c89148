import Crypto
import Private
import Tree
import Wire

/// Users, groups and records for the private conversation tests: deterministic keys, real
/// crypto, real signed records.
struct Person {
    let key: PrivateKey
    var id: PublicKey { key.publicKey }
    var device: X25519PrivateKey { key.x25519() }
    var deviceKey: X25519PublicKey { try! key.publicKey.x25519() }

    init(_ byte: UInt8) { key = try! PrivateKey(seedBytes: [UInt8](repeating: byte, count: 32)) }
}

enum Fixture {
    static let alice = Person(1), bob = Person(2), carol = Person(3), dave = Person(4)
    static let salt = [UInt8](repeating: 0x5A, count: 32)
    static var group: String { ConversationID.group(creator: alice.id, salt: salt) }

    /// A key record for epoch `epoch` of `conversation` made by `author`, sealed to `members`.
    static func keyRecord(_ author: Person, _ conversation: String = group, epoch: UInt64, members: [Person], title: String = "Team",
                          salt: [UInt8] = salt, key: EpochKey = EpochKey(), previous: (Digest32, EpochKey)? = nil,
                          clock: UInt64) throws -> (Record, EpochKey) {
        let meta = GroupMeta(title: title, members: members.map(\.id), previous: previous.map { ($0.0, $0.1.copyBytes()) })
        let body = KeySchedule.makeKeyBody(conversation: conversation, epoch: epoch, salt: salt, key: key, meta: meta,
                                           author: author.id, recipients: members.map(\.deviceKey))
        return (try Record.make(body: .groupKey(body), clock: clock, signer: author.key), key)
    }

    /// A message by `author` sealed in the epoch of `epochRecord`.
    static func message(_ author: Person, _ text: String, conversation: String = group, epoch epochRecord: Record, key: EpochKey,
                        clock: UInt64, mid: String? = nil) throws -> Record {
        let id = mid ?? "m\(clock)"
        let path = try Path("/conversations/\(conversation)/messages/\(id)")
        let value: JSONValue = .object(["senderId": .string(author.id.userID), "text": .string(text)])
        let body = try KeySchedule.sealWrite([WritePair(path: path, value: value)], conversation: conversation,
                                             epoch: epochRecord.id, key: key, author: author.id)
        return try Record.make(body: .sealedWrite(body), clock: clock, signer: author.key)
    }

    static func leave(_ author: Person, conversation: String = group, clock: UInt64) throws -> Record {
        try Record.make(body: .leave(LeaveBody(conversation: conversation)), clock: clock, signer: author.key)
    }
}
