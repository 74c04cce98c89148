import Crypto
import Wire

/// What a key record says only to the members (Protocol.md §11.3): the title, the member list,
/// and, for a group that shares its history, the previous epoch's key.
public struct GroupMeta: Hashable, Sendable {
    public static let maxTitleBytes = 256

    public let title: String
    /// Sorted, no duplicates.
    public let members: [PublicKey]
    /// Whether new members read the history: then each epoch after the first hands on the
    /// previous one's key.
    public let sharesHistory: Bool
    /// The epoch this one follows and its key, when members of this epoch may read the
    /// previous one (and so, link by link, all history).
    public let previous: (epoch: Digest32, key: [UInt8])?

    public init(title: String, members: some Sequence<PublicKey>, sharesHistory: Bool = false, previous: (epoch: Digest32, key: [UInt8])? = nil) {
        self.title = title
        self.members = Array(Set(members)).sorted()
        self.sharesHistory = sharesHistory || previous != nil
        self.previous = previous
    }

    public static func == (a: GroupMeta, b: GroupMeta) -> Bool {
        a.title == b.title && a.members == b.members && a.sharesHistory == b.sharesHistory && a.previous?.epoch == b.previous?.epoch && a.previous?.key == b.previous?.key
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(title)
        hasher.combine(members)
        hasher.combine(previous?.epoch)
    }

    /// meta = [title, [+ member], history, previous] ; previous = null / [epoch id, key]
    public func encoded() -> [UInt8] {
        let prev: CBOR = previous.map { .array([.bytes($0.epoch.bytes), .bytes($0.key)]) } ?? .null
        return CBOR.array([.text(title), .array(members.map { .bytes($0.bytes) }), .bool(sharesHistory), prev]).encoded()
    }

    /// Decodes untrusted (if authenticated) bytes: strictly, within the record limits.
    public static func decode(_ bytes: [UInt8]) throws(PrivateError) -> GroupMeta {
        guard let item = try? CBORDecoder.decode(bytes, limits: CBORLimits(maxDepth: 3, maxItems: 3 * PrivateLimits.maxBoxes + 8)),
              case let .array(f) = item, f.count == 4, case let .text(title) = f[0], case let .array(memberItems) = f[1],
              case let .bool(history) = f[2] else {
            throw .badMeta("meta is [title, [members], history, previous]")
        }
        guard title.utf8.count <= maxTitleBytes else { throw .badMeta("title over \(maxTitleBytes) bytes") }
        var members = [PublicKey]()
        for item in memberItems {
            guard case let .bytes(b) = item, let key = try? PublicKey(bytes: b) else { throw .badMeta("a member is a 32-byte key") }
            members.append(key)
        }
        guard !members.isEmpty, members.count <= PrivateLimits.maxBoxes, zip(members, members.dropFirst()).allSatisfy({ $0 < $1 }) else {
            throw .badMeta("members are 1...\(PrivateLimits.maxBoxes) keys in strictly increasing order")
        }
        var previous: (Digest32, [UInt8])?
        switch f[3] {
        case .null: previous = nil
        case let .array(p):
            guard p.count == 2, case let .bytes(id) = p[0], let digest = try? Digest32(bytes: id),
                  case let .bytes(key) = p[1], key.count == EpochKey.byteCount else { throw .badMeta("previous is [epoch id, key]") }
            previous = (digest, key)
        default: throw .badMeta("previous is null or [epoch id, key]")
        }
        guard history || previous == nil else { throw .badMeta("previous handed on without history") }
        return GroupMeta(title: title, members: members, sharesHistory: history, previous: previous)
    }
}

/// Why private material was refused; every case leaves the store and the tree as they were.
public enum PrivateError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A key record's meta does not decode or breaks a rule.
    case badMeta(String)
    /// A ciphertext does not open under the key, or its padding is wrong.
    case undecryptable
    /// The plaintext of a sealed write is not a valid write body.
    case badPlaintext(String)
    /// A pair of a sealed write lies outside its conversation.
    case outsideConversation(String)
    /// Sealing was asked of something the rules do not allow.
    case notAllowed(String)

    public var description: String {
        switch self {
        case let .badMeta(why): return "bad key record meta: \(why)"
        case .undecryptable: return "ciphertext does not open"
        case let .badPlaintext(why): return "bad sealed write: \(why)"
        case let .outsideConversation(path): return "sealed pair outside its conversation: \(path)"
        case let .notAllowed(why): return why
        }
    }
}
