import Crypto
import Tree
import Wire
import TestSupport

/// The merge as Protocol.md §5 defines it, written the slow, obvious way and from the text alone:
/// zones, the senderId rule, message keys bound to authors and write order are worked out here
/// again, not by the production predicates, so that a bug in those cannot hide in both. Every
/// effective pair is folded in write order over an in-memory tree; the store must always agree.
enum MergeModel {
    /// The zone root (as segments) of a path: `users/$uid` or `conversations/$cid/messages/$mid`.
    static func zoneRoot(_ s: [String]) -> [String]? {
        if s.count >= 2, s[0] == "users" { return Array(s[..<2]) }
        if s.count >= 4, s[0] == "conversations", s[2] == "messages" { return Array(s[..<4]) }
        return nil
    }

    /// Write order (§5.3): clock, then author bytes, then record id bytes.
    static func precedes(_ a: Record, _ b: Record) -> Bool {
        if a.clock != b.clock { return a.clock < b.clock }
        if a.author.bytes != b.author.bytes { return a.author.bytes.lexicographicallyPrecedes(b.author.bytes) }
        return a.id.bytes.lexicographicallyPrecedes(b.id.bytes)
    }

    /// §5.4: the 12-character tag of a message key, as the text defines it.
    static func tag(_ prefix: [UInt8], _ uid: String) -> [UInt8] {
        let alphabet = Array("-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz".utf8)
        let digest = BLAKE2b.digest256(Array("lanchat/message-key/v1".utf8) + [0] + Array(uid.utf8) + prefix).bytes
        var bits = [UInt8]()
        for byte in digest.prefix(9) { for i in (0..<8).reversed() { bits.append(byte >> UInt8(i) & 1) } }
        return (0..<12).map { c in alphabet[Int(bits[c * 6..<c * 6 + 6].reduce(0) { $0 << 1 | $1 })] }
    }

    static func bound(_ key: String, _ uid: String) -> Bool {
        let bytes = Array(key.utf8)
        return bytes.count > 12 && tag(Array(bytes.dropLast(12)), uid) == Array(bytes.suffix(12))
    }

    /// §5.4's senderId rule for a pair at `s` (absolute segments) inside a message.
    static func keepsSender(_ s: [String], _ value: JSONValue, _ uid: String) -> Bool {
        if s.count == 4 {
            if value == .null { return true }
            guard case let .object(m) = value else { return false }
            return m["senderId"] == .string(uid)
        }
        if s[4] == "senderId" { return s.count == 5 && value == .string(uid) }
        return true
    }

    /// `value` written at `s` with every zone root inside it removed (empty objects vanish).
    static func outsideZones(_ value: JSONValue, _ s: [String]) -> JSONValue {
        guard case let .object(members) = value else { return value }
        var kept = [String: JSONValue]()
        for (key, child) in members {
            let childPath = s + [key]
            if let root = zoneRoot(childPath), root.count == childPath.count { continue }
            let rest = outsideZones(child, childPath)
            if rest != .null { kept[key] = rest }
        }
        return kept.isEmpty ? .null : .object(kept)
    }

    static func tree(of records: [Record]) -> JSONValue {
        var open: [(Record, WritePair)] = []
        var zones: [[String]: [(Record, WritePair)]] = [:]
        for record in Set(records) {
            guard case let .write(pairs) = record.body else { continue }
            for pair in pairs {
                if let root = zoneRoot(pair.path.segments) {
                    zones[root, default: []].append((record, pair))
                } else {
                    open.append((record, WritePair(path: pair.path, value: outsideZones(pair.value, pair.path.segments))))
                }
            }
        }
        var tree = JSONValue.null
        for (_, pair) in open.sorted(by: { precedes($0.0, $1.0) }) {
            tree = tree.setting(pair.path, to: pair.value)
        }
        for (root, pairs) in zones {
            let sorted = pairs.sorted { precedes($0.0, $1.0) }
            let owner: String?
            if root[0] == "users" {
                owner = root[1]
            } else {
                // Claimants: authors with a pair that keeps the senderId rule. The one the key is
                // bound to owns the message; else a single claimant; else nobody (disputed).
                let claimants = Set(sorted.filter { keepsSender($0.1.path.segments, $0.1.value, $0.0.author.userID) }.map { $0.0.author.userID })
                owner = claimants.first { bound(root[3], $0) } ?? (claimants.count == 1 ? claimants.first : nil)
            }
            guard let owner else { continue }
            var zoneTree = JSONValue.null
            for (record, pair) in sorted where record.author.userID == owner {
                if root[0] == "conversations", !keepsSender(pair.path.segments, pair.value, owner) { continue }
                zoneTree = zoneTree.setting(pair.path, to: pair.value)
            }
            let rootPath = try! Path(segments: root)
            let value = zoneTree.value(at: rootPath)
            if value != .null { tree = tree.setting(rootPath, to: value) }
        }
        return tree
    }
}

/// Random records over a small space of paths, so writes collide, nest and shadow each other,
/// and touch both protected zones.
struct RecordGenerator {
    var rng: SplitMix64
    let authors: [PrivateKey]

    /// The key "m1" bound to each author (Protocol.md §5.4), built by the model's own tag.
    let boundKeys: [String]

    init(seed: UInt64, authors: [PrivateKey]) {
        rng = SplitMix64(seed: seed)
        self.authors = authors
        boundKeys = authors.map { "m1" + String(decoding: MergeModel.tag(Array("m1".utf8), $0.publicKey.userID), as: UTF8.self) }
    }

    mutating func pick<T>(_ items: [T]) -> T { items[Int(rng.next() % UInt64(items.count))] }

    mutating func path(author: PrivateKey) -> Path {
        let keys = ["a", "b", "c", "a!", "1", "10"]
        var segments: [String]
        switch rng.next() % 10 {
        case 0, 1:
            // Own or someone else's profile.
            let uid = rng.next() % 3 == 0 ? pick(authors).publicKey.userID : author.publicKey.userID
            segments = ["users", uid]
        case 2, 3:
            // Unbound keys, and keys bound to each author (`boundKeys`), so claims collide.
            segments = ["conversations", pick(["c1", "c2"]), "messages", pick(["m1", "m2"] + boundKeys)]
        case 4:
            segments = pick([[], ["users"], ["conversations"], ["conversations", "c1"], ["conversations", "c1", "messages"]])
        default:
            segments = []
        }
        let extra = Int(rng.next() % 3)
        for _ in 0..<extra { segments.append(pick(keys)) }
        return try! Path(segments: segments)
    }

    mutating func value(depth: Int, author: PrivateKey, at path: Path) -> JSONValue {
        if path.segments.count == 4, MergeModel.zoneRoot(path.segments)?.count == 4, rng.next() % 4 != 0 {
            // A whole message, usually with a senderId that satisfies the rule.
            let sender = rng.next() % 5 == 0 ? pick(authors).publicKey.userID : author.publicKey.userID
            return .object(["senderId": .string(sender), "text": .string(pick(["hi", "yo"]))])
        }
        switch rng.next() % (depth > 1 ? 5 : 8) {
        case 0: return .null
        case 1: return .bool(rng.next() % 2 == 0)
        case 2: return .number(Double(Int(rng.next() % 7) - 3))
        case 3: return .number(0.5)
        case 4: return .string(pick(["x", "y", "Nguyễn", "박준영"]))
        default:
            var members = [String: JSONValue]()
            for _ in 0..<(1 + rng.next() % 3) {
                let key = pick(["a", "b", "c", "users", "messages", "senderId", "m1"])
                let child = try! path.appending(key)
                let v = value(depth: depth + 1, author: author, at: child)
                if v != .null { members[key] = v }
            }
            return members.isEmpty ? .string("leaf") : .object(members)
        }
    }

    mutating func record() -> Record {
        let author = pick(authors)
        var pairs = [String: WritePair]()
        for _ in 0..<(1 + rng.next() % 2) {
            let p = path(author: author)
            pairs[p.storageKey] = WritePair(path: p, value: value(depth: 0, author: author, at: p))
        }
        // Keep only pairs that do not nest, as a valid write requires.
        var chosen = [WritePair]()
        for pair in pairs.values.sorted(by: { $0.path.depth < $1.path.depth }) {
            if !chosen.contains(where: { $0.path.isAncestorOrSelf(of: pair.path) || pair.path.isAncestorOrSelf(of: $0.path) }) {
                chosen.append(pair)
            }
        }
        chosen.sort { Array($0.path.storageKey.utf8).lexicographicallyPrecedes(Array($1.path.storageKey.utf8)) }
        let clock = (1_700_000_000_000 + rng.next() % 8) << 16 | rng.next() % 2
        return try! Record.make(body: .write(chosen), clock: clock, signer: author)
    }
}
