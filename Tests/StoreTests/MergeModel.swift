import Crypto
import Tree
import Wire
import TestSupport

/// The merge as Protocol.md §5 defines it, written the slow, obvious way: fold every effective
/// pair in write order over an in-memory tree. The store must always agree with it.
enum MergeModel {
    static func tree(of records: [Record]) -> JSONValue {
        var open: [(WriteOrder, WritePair)] = []
        var zones: [Zone: [(WriteOrder, WritePair, PublicKey)]] = [:]
        for record in Set(records) {
            guard case let .write(pairs) = record.body else { continue }
            for pair in pairs {
                let zone = Zone.of(pair.path)
                if zone == .open {
                    open.append((record.order, WritePair(path: pair.path, value: Zone.stripZones(pair.value, at: pair.path))))
                } else {
                    zones[zone, default: []].append((record.order, pair, record.author))
                }
            }
        }
        var tree = JSONValue.null
        for (_, pair) in open.sorted(by: { $0.0 < $1.0 }) {
            tree = tree.setting(pair.path, to: pair.value)
        }
        for (zone, pairs) in zones {
            let sorted = pairs.sorted { $0.0 < $1.0 }
            let effective: [(WriteOrder, WritePair, PublicKey)]
            switch zone {
            case let .user(uid):
                effective = sorted.filter { $0.2.userID == uid }
            case .message:
                let owner = sorted[0].2
                effective = sorted.filter {
                    $0.2 == owner && Zone.keepsSenderID(path: $0.1.path, value: $0.1.value, author: owner.userID)
                }
            case .open:
                effective = []
            }
            var zoneTree = JSONValue.null
            for (_, pair, _) in effective { zoneTree = zoneTree.setting(pair.path, to: pair.value) }
            let value = zoneTree.value(at: zone.root)
            if value != .null { tree = tree.setting(zone.root, to: value) }
        }
        return tree
    }
}

/// Random records over a small space of paths, so writes collide, nest and shadow each other,
/// and touch both protected zones.
struct RecordGenerator {
    var rng: SplitMix64
    let authors: [PrivateKey]

    init(seed: UInt64, authors: [PrivateKey]) {
        rng = SplitMix64(seed: seed)
        self.authors = authors
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
            segments = ["conversations", pick(["c1", "c2"]), "messages", pick(["m1", "m2"])]
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
        if path.segments.count == 4, Zone.isRoot(path.segments), rng.next() % 4 != 0 {
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
