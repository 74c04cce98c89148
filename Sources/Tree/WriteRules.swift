/// The write rules of lanchat (Protocol.md §5.4). They are functions of a pair and the record set
/// alone, never of arrival order or of clocks a signer chooses, so every node decides alike and no
/// member can win a zone by backdating.
///
/// The tree is split into *zones* that only certain authors may change:
/// - `/users/$uid`: the profile of `$uid`, written only by the author whose user id is `$uid`;
/// - `/conversations/$cid/messages/$mid`: a message, owned by the author that `$mid` is bound to
///   (`MessageKey`), or, for a key bound to no writer, by its only claimant; its `senderId` must
///   be the owner.
/// Everything else is the *open* zone: any member, last writer wins. A pair in the open zone never
/// reaches into a zone: whatever its value holds at or below a zone root is ignored, and its
/// deletes leave zones alone.
public enum Zone: Hashable, Sendable {
    /// Everything outside the protected zones.
    case open
    /// `/users/$uid`.
    case user(uid: String)
    /// `/conversations/$cid/messages/$mid`.
    case message(conversation: String, message: String)

    /// The zone a path lies in (zone roots belong to their own zone), from the segments of a
    /// valid path: `root` builds a path from them again without checking the keys a second time.
    static func of(_ segments: [String]) -> Zone {
        if segments.count >= 2, segments[0] == "users" { return .user(uid: segments[1]) }
        if segments.count >= 4, segments[0] == "conversations", segments[2] == "messages" {
            return .message(conversation: segments[1], message: segments[3])
        }
        return .open
    }

    /// The zone of a path.
    public static func of(_ path: Path) -> Zone { of(path.segments) }

    /// Whether two pairs of one write may lie one above the other (Protocol.md §3.4): only across
    /// a zone's root, `ancestor` in the open zone and `path` in a protected zone. They never act
    /// on each other, as an open pair leaves zones alone and a zone folds only its own pairs.
    public static func pairsMayNest(_ ancestor: Path, above path: Path) -> Bool {
        of(ancestor) == .open && of(path) != .open
    }

    /// The root path of the zone; the tree root for the open zone. The keys came from a valid
    /// path (`of`), so they are not validated again: this runs several times for every pair a
    /// sync stores, and checking keys was the largest single cost of applying a message.
    public var root: Path {
        switch self {
        case .open: return .root
        case let .user(uid): return Zone.checked(["users", uid])
        case let .message(c, m): return Zone.checked(["conversations", c, "messages", m])
        }
    }

    private static func checked(_ segments: [String]) -> Path {
        assert((try? Path(segments: segments)) != nil, "a zone of keys from no valid path")
        return Path(unchecked: segments)
    }

    /// Whether `segments` is a conversation's message list, `/conversations/$cid/messages`, where
    /// pushed keys are bound to their author.
    public static func isMessageList(_ segments: [String]) -> Bool {
        segments.count == 3 && segments[0] == "conversations" && segments[2] == "messages"
    }

    /// Whether `segments` is exactly a zone root.
    public static func isRoot(_ segments: [String]) -> Bool {
        (segments.count == 2 && segments[0] == "users")
            || (segments.count == 4 && segments[0] == "conversations" && segments[2] == "messages")
    }

    /// The part of `value` (written at `path` in the open zone) that lies outside every zone.
    /// The result is normalized: objects emptied by the removal vanish.
    public static func stripZones(_ value: JSONValue, at path: Path) -> JSONValue {
        guard mayHoldZones(path.segments) else { return value }
        return strip(value, path.segments)
    }

    /// Whether a zone root can lie at or below `segments`: the tree root, `/users`, or a path
    /// above a message (`/conversations`, `/conversations/$cid`, `.../messages`). Elsewhere (most
    /// of a large update's pairs) a value holds nothing of a zone, which is worth knowing before
    /// walking it.
    public static func mayHoldZones(_ segments: [String]) -> Bool {
        guard let first = segments.first else { return true }
        if first == "users" { return segments.count <= 2 }
        if first == "conversations" { return segments.count <= 4 && (segments.count < 3 || segments[2] == "messages") }
        return false
    }

    private static func strip(_ value: JSONValue, _ segments: [String]) -> JSONValue {
        // Zone roots are at depth 2 or 4; nothing deeper than that can start one.
        guard segments.count < 4, case let .object(members) = value else { return value }
        var kept = [String: JSONValue]()
        for (key, child) in members {
            let childSegments = segments + [key]
            if isRoot(childSegments) { continue }
            let stripped = strip(child, childSegments)
            if stripped != .null { kept[key] = stripped }
        }
        return kept.isEmpty ? .null : .object(kept)
    }

    /// Whether a pair in a message zone obeys the senderId rule: the whole message must name its
    /// author as `senderId` (a delete is fine), `senderId` itself may only be set to the author, and
    /// nothing may be written below `senderId`.
    public static func keepsSenderID(path: Path, value: JSONValue, author uid: String) -> Bool {
        let depth = path.segments.count
        if depth == 4 {
            guard case let .object(members) = value else { return value == .null }
            return members["senderId"] == .string(uid)
        }
        if path.segments[4] == "senderId" {
            return depth == 5 && value == .string(uid)
        }
        return true
    }
}
