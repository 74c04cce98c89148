import Crypto
import Private
import Tree
import Wire

/// Records of one group, made directly (as a hostile creator or member could sign them): key
/// records with chosen members, epoch numbers and clocks, and sealed messages in any epoch.
struct GroupScript {
    let creator: PrivateKey
    var salt = [UInt8](repeating: 0x33, count: 32)
    var conversation: String { ConversationID.group(creator: creator.publicKey, salt: salt) }

    func keyRecord(epoch: UInt64, members: [PrivateKey], clock: UInt64) throws -> (record: Record, key: EpochKey) {
        let key = EpochKey()
        let meta = GroupMeta(title: "script", members: members.map(\.publicKey))
        let body = KeySchedule.makeKeyBody(conversation: conversation, epoch: epoch, salt: salt, key: key, meta: meta,
                                           author: creator.publicKey, recipients: try members.map { try $0.publicKey.x25519() })
        return (try Record.make(body: .groupKey(body), clock: clock, signer: creator), key)
    }

    /// A message by `author`, sealed in the epoch of `epoch` under `key`, keyed `m<index>`
    /// bound to its author.
    func message(_ index: Int, by author: PrivateKey, epoch: Record, key: EpochKey, clock: UInt64) throws -> Record {
        let digits = String(index)
        let messageKey = MessageKey.bind("-m" + String(repeating: "0", count: 18 - digits.count) + digits, to: author.publicKey.userID)
        let path = try Path(segments: ["conversations", conversation, "messages", messageKey])
        let value: JSONValue = .object(["senderId": .string(author.publicKey.userID), "text": .string("message \(index)")])
        let body = try KeySchedule.sealWrite([WritePair(path: path, value: value)], conversation: conversation, epoch: epoch.id, key: key,
                                             author: author.publicKey)
        return try Record.make(body: .sealedWrite(body), clock: clock, signer: author)
    }

    func leave(by author: PrivateKey, clock: UInt64) throws -> Record {
        try Record.make(body: .leave(LeaveBody(conversation: conversation)), clock: clock, signer: author)
    }
}
