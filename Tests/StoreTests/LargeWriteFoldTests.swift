import Crypto
import Private
import Testing
import Tree
@testable import Wire
@testable import Store
import TestSupport

/// A large write folded from its content read as a stream (an open pair's leaves going to the
/// tree as they are read, a zone's pair built whole) leaves exactly the tree and the tables
/// that the same pairs leave as a kind-1 record, over the same earlier and later writes.
@Suite("Large writes folded as a stream")
struct LargeWriteFoldTests {
    let alice = testAuthors[0], bob = testAuthors[1]
    let now: UInt64 = 1_700_000_000_000

    static let keys = ["a", "b", "name", "0", "1", "12", "é", "e\u{301}x", "ệ", "e\u{323}\u{302}y", "한", "\u{1112}\u{1161}\u{11AB}z",
                       "😀", "\u{212A}", "Å", "A\u{30A}q", "x y"]

    static func randomKey(_ random: inout SplitMix64) -> String {
        keys[Int(random.next() % UInt64(keys.count))] + (random.chance(0.5) ? "\(random.next() % 20)" : "")
    }

    static func randomLeaf(_ random: inout SplitMix64) -> JSONValue {
        switch random.next() % 5 {
        case 0: return .number(Double(random.next() % 1000))
        case 1: return .number(Double(random.next() % 1000) / 8 + 0.0625)
        case 2: return .bool(random.chance(0.5))
        case 3: return .string(random.chance(0.1) ? String(repeating: "long ", count: 200) : "s\(random.next() % 100)")
        default: return .string("héllo \(random.next() % 10)")
        }
    }

    static func randomObject(_ random: inout SplitMix64, depth: Int) -> JSONValue {
        var members = [String: JSONValue]()
        for _ in 0..<Int(1 + random.next() % 5) {
            members[randomKey(&random)] = depth < 3 && random.chance(0.4) ? randomObject(&random, depth: depth + 1) : randomLeaf(&random)
        }
        return .object(members)
    }

    func message(_ random: inout SplitMix64, by author: PrivateKey) -> JSONValue {
        ["senderId": .string(author.publicKey.userID), "text": Self.randomLeaf(&random), "extra": Self.randomObject(&random, depth: 2)]
    }

    /// Random pairs (sorted as written, disjoint) into the open zone, above zones (their zone
    /// content is not the open pair's to write), into zones (one's own and another's), and
    /// above a private conversation.
    func randomPairs(_ random: inout SplitMix64) throws -> [WritePair] {
        let me = alice.publicKey.userID, other = bob.publicKey.userID
        let hidden = ConversationID.group(creator: bob.publicKey, salt: [7])
        var byPath = [String: JSONValue]()
        for _ in 0..<Int(2 + random.next() % 12) {
            switch random.next() % 10 {
            case 0:
                byPath["/conversations/c\(random.next() % 3)"] = [
                    "meta": Self.randomObject(&random, depth: 1),
                    "messages": .object(["m\(random.next() % 4)": message(&random, by: alice), "n\(random.next() % 4)": message(&random, by: bob)]),
                ]
            case 1:
                byPath["/users"] = .object([me: Self.randomObject(&random, depth: 1), other: Self.randomObject(&random, depth: 1), "loose": Self.randomLeaf(&random)])
            case 2:
                byPath["/users/\(random.chance(0.7) ? me : other)"] = Self.randomObject(&random, depth: 1)
            case 3:
                byPath["/conversations/c\(random.next() % 3)/messages/m\(random.next() % 4)"] = message(&random, by: alice)
            case 4:
                byPath["/conversations"] = .object([hidden: Self.randomObject(&random, depth: 1),
                                                    "c9": .object(["meta": Self.randomObject(&random, depth: 2)])])
            case 5:
                byPath["/open/\(Self.randomKey(&random))"] = random.chance(0.1) ? .null : Self.randomObject(&random, depth: 1)
            case 6:
                byPath["/open/x/\(Self.randomKey(&random))"] = Self.randomLeaf(&random)
            case 7:
                byPath["/n/\(Self.randomKey(&random))/\(Self.randomKey(&random))"] = Self.randomObject(&random, depth: 1)
            case 8:
                byPath["/open/y"] = Self.randomObject(&random, depth: 0)
            default:
                byPath["/big/\(random.next() % 5)"] = Self.randomObject(&random, depth: 0)
            }
        }
        // Many pairs now and then, as an update of many children is written.
        if random.chance(0.3) {
            for i in 0..<Int(100 + random.next() % 300) {
                byPath["/many/\(Self.randomKey(&random))\(i)"] = random.chance(0.5) ? Self.randomLeaf(&random) : Self.randomObject(&random, depth: 2)
            }
        }
        let sorted = try byPath.map { WritePair(path: try Path($0.key), value: $0.value) }
            .sorted { Array($0.path.storageKey.utf8).lexicographicallyPrecedes(Array($1.path.storageKey.utf8)) }
        var pairs = [WritePair]()
        for pair in sorted where !pairs.contains(where: { $0.path.isAncestorOrSelf(of: pair.path) || pair.path.isAncestorOrSelf(of: $0.path) }) {
            pairs.append(pair)
        }
        return pairs
    }

    /// Earlier and later writes, the same on both stores: values the pairs replace, extend or
    /// hide parts of (newer writes below them arrive first).
    func surroundings(_ random: inout SplitMix64) throws -> [Record] {
        let me = alice.publicKey.userID
        var records = [Record]()
        let before: [(String, JSONValue)] = [
            ("/open/x", ["old": 1, "keep": "k"]), ("/open/y", "a primitive"), ("/conversations/c1/meta", ["title": "t"]),
            ("/users/\(me)", ["name": "old"]), ("/conversations/c1/messages/m1", ["senderId": .string(me), "text": "old"]),
            ("/big/1/a", 5),
        ]
        for (index, (path, value)) in before.enumerated() {
            records.append(try Record.make(body: .write([WritePair(path: try Path(path), value: value)]), clock: (now - 100 + UInt64(index)) << 16, signer: alice))
        }
        let after: [(String, JSONValue)] = [
            ("/open/x/\(Self.randomKey(&random))", "newer"), ("/open/y/b", .null), ("/open/y/a/deep", "newer below"),
            ("/big/\(random.next() % 5)/\(Self.randomKey(&random))", ["n": 1]), ("/n", .null),
        ]
        for (index, (path, value)) in after.enumerated() where random.chance(0.7) {
            records.append(try Record.make(body: .write([WritePair(path: try Path(path), value: value)]), clock: (now + 100 + UInt64(index)) << 16, signer: bob))
        }
        return records
    }

    /// The tables of `store` with the ord of `record` written as "W", so that two stores that
    /// folded the same pairs from different records compare.
    static func tables(_ store: Store, _ record: Record) throws -> [String] {
        let hex = record.order.key.map { String(format: "%02X", $0) }.joined()
        return try ConversationRefoldTests.dump(store).map { $0.replacingOccurrences(of: hex, with: "W") }
    }

    @Test("random pairs folded from a large write's content as a stream and from a kind-1 record give the same tree and tables",
          arguments: 0..<6)
    func streamedFoldAgrees(seed: UInt64) throws {
        var random = SplitMix64(seed: 0xF01D_0000 + seed)
        for _ in 0..<12 {
            let pairs = try randomPairs(&random)
            let surroundings = try surroundings(&random)
            let clock = now << 16
            let streamed = try memoryStore(), whole = try memoryStore()

            // As written: keys spelled as they were given, NFC or not.
            let content = RecordCodec.encodeBody(.write(pairs)).encoded()
            let (write, parts) = LargeWrite.describing(content, chunkSize: 4096)
            try streamed.chunkDB.transaction(.immediate) { _ = try streamed.chunkStore.append(Array(zip(write.chunks, parts))) }
            let large = try Record.make(body: .largeWrite(write), clock: clock, signer: alice)
            let small = try Record.make(body: .write(pairs), clock: clock, signer: alice)

            let newer = surroundings.filter { $0.clock > clock }, older = surroundings.filter { $0.clock < clock }
            _ = try streamed.ingest(older + newer, nowMillis: now + 1000)
            _ = try whole.ingest(older + newer, nowMillis: now + 1000)
            #expect(try streamed.ingest([large], nowMillis: now + 1000).added == 1)
            #expect(try whole.ingest([small], nowMillis: now + 1000).added == 1)
            #expect(try !streamed.hasPendingLargeWrites)

            let tree = try whole.value(at: .root)
            #expect(try streamed.value(at: .root) == tree)
            #expect(try Self.tables(streamed, large) == Self.tables(whole, small))
            // A rebuild of the tree from the records folds the content as a stream again, alike.
            try streamed.db.run("INSERT OR REPLACE INTO meta(key, value) VALUES ('tree_rebuild', 1)")
            try streamed.rebuildTreeIfRequested()
            #expect(try Self.tables(streamed, large) == Self.tables(whole, small))
        }
    }
}
