import Crypto
import Wire

/// Ids of private conversations, made so that every node can check who may hand out their keys
/// (Protocol.md §11.1): a group's id is a hash of its creator's public key and a salt, a direct
/// conversation's a hash of its two members' keys.
public enum ConversationID {
    static let groupDomain: [UInt8] = Array("lanchat/group/v1".utf8) + [0]
    static let directDomain: [UInt8] = Array("lanchat/direct/v1".utf8) + [0]

    /// "g_" and the first 15 bytes of BLAKE2b-256(domain || creator || salt) in base64url.
    public static func group(creator: PublicKey, salt: [UInt8]) -> String {
        "g_" + Base64URL.encode(Array(BLAKE2b.hash(groupDomain + creator.bytes + salt).prefix(15)))
    }

    /// "d_" and the first 15 bytes of BLAKE2b-256(domain || lower key || higher key): the same id
    /// whichever of the two asks.
    public static func direct(_ a: PublicKey, _ b: PublicKey) -> String {
        let (low, high) = a < b ? (a, b) : (b, a)
        return "d_" + Base64URL.encode(Array(BLAKE2b.hash(directDomain + low.bytes + high.bytes).prefix(15)))
    }

    public static func isDirect(_ cid: String) -> Bool { cid.hasPrefix("d_") }
    public static func isPrivate(_ cid: String) -> Bool { PrivateBodies.isConversationID(cid) }

    /// Whether `author` may make key records for the conversation `body` names: the creator of a
    /// group (the salt reproduces the id), or one of a direct conversation's two members (the
    /// salt is the other member's public key).
    public static func mayKey(_ body: GroupKeyBody, author: PublicKey) -> Bool {
        if isDirect(body.conversation) {
            guard let other = try? PublicKey(bytes: body.salt), other != author else { return false }
            return direct(author, other) == body.conversation
        }
        return group(creator: author, salt: body.salt) == body.conversation
    }

    /// A direct conversation's two members, as its key record names them.
    static func directMembers(_ body: GroupKeyBody, author: PublicKey) -> Set<PublicKey>? {
        guard isDirect(body.conversation), let other = try? PublicKey(bytes: body.salt) else { return nil }
        return [author, other]
    }
}
