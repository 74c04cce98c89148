import Crypto
import Testing
import Tree
import Wire
@testable import Store
import TestSupport

/// Index-backed queries (`Store.query`, `Store.shallowValue`) against the reference: the whole
/// location read (`Store.value(at:)`) and filtered by `FirebaseQuery.apply` / `shallow`, over random
/// trees and random queries, with writes between queries so that the indexes are kept, not only
/// built.
@Suite("Indexed queries")
struct IndexedQueryTests {
    /// Keys in every class key order distinguishes: integer keys (negative, large), non-canonical
    /// integers, push-id-like text, NFC text, a scalar above U+FFFF and one in U+E000-U+FFFF
    /// (UTF-16 order differs from scalar order there).
    static let keys = ["0", "1", "2", "10", "-5", "2147483647", "2147483648", "007", "-0", "a", "b", "a b", "Z", "-Mx1",
                       "\u{E9}t\u{E9}", "\u{1F600}", "\u{E000}x", "\u{FFFD}", "\u{D7FF}", "m1", "senderId"]
    static let scalars: [JSONValue] = [.null, .bool(false), .bool(true), .number(-3), .number(0), .number(-0.0), .number(2.5),
                                       .number(1e300), .number(-1e-300), .string(""), .string("a"), .string("ab"), .string("B"),
                                       .string("\u{1F600}"), .string("\u{E000}"), .string("1")]

    /// The keys that sort as their bytes (`ZoneOrders.sortsAsBytes`): a list holding only these
    /// is read in key order from `zones` itself, with no ordering rows.
    static let bytewiseKeys = keys.filter(ZoneOrders.sortsAsBytes)

    struct Generator {
        var rng: SplitMix64
        let authors: [PrivateKey]
        /// Whether keys (and key bounds) that do not sort as their bytes are written and asked
        /// for; until they are, zone lists answer key queries from their zones.
        var allKeys = true
        var keys: [String] { allKeys ? IndexedQueryTests.keys : IndexedQueryTests.bytewiseKeys }

        mutating func pick<T>(_ items: [T]) -> T { items[Int(rng.next() % UInt64(items.count))] }
        mutating func chance(_ percent: UInt64) -> Bool { rng.next() % 100 < percent }

        /// A message-shaped value: the fields chat apps order by, each sometimes missing, often
        /// equal across messages, of every type.
        mutating func message(sender: String) -> JSONValue {
            var fields: [String: JSONValue] = ["senderId": .string(sender)]
            for field in ["date", "timestamp", "name", "text"] where chance(75) {
                let value = chance(60) ? .number(Double(rng.next() % 6)) : pick(IndexedQueryTests.scalars)
                if value != .null { fields[field] = value }
            }
            if chance(20) { fields["a"] = .object(["b": pick(IndexedQueryTests.scalars.filter { $0 != .null })]) }
            if chance(10) { fields["date"] = .object(["x": 1]) }
            return .object(fields)
        }

        /// One write: mostly messages of one conversation (whole, one field, deleted, or claimed by
        /// a second author), profiles of any shape, and open-zone values.
        mutating func record(clock: UInt64) -> Record {
            let author = chance(85) ? authors[0] : pick(authors)
            let uid = author.publicKey.userID
            let key = pick(keys)
            let pair: WritePair
            switch rng.next() % 10 {
            case 0...4:
                let root = ["conversations", "c1", "messages", key]
                switch rng.next() % 6 {
                case 0: pair = WritePair(path: try! Path(segments: root), value: .null)
                case 1: pair = WritePair(path: try! Path(segments: root + [pick(["date", "name", "timestamp"])]),
                                         value: pick(IndexedQueryTests.scalars))
                default: pair = WritePair(path: try! Path(segments: root), value: message(sender: uid))
                }
            case 5, 6:
                let value: JSONValue = chance(50) ? message(sender: uid) : pick(IndexedQueryTests.scalars)
                pair = WritePair(path: try! Path(segments: ["users", uid]), value: value)
            case 7:
                pair = WritePair(path: try! Path(segments: ["open", key]), value: chance(50) ? message(sender: uid) : pick(IndexedQueryTests.scalars))
            case 8:
                // A primitive where a zone list is (the zones below still win when present).
                pair = WritePair(path: try! Path(segments: ["conversations", "c1", "messages"]), value: pick(IndexedQueryTests.scalars))
            default:
                pair = WritePair(path: try! Path(segments: ["conversations", "c1"]), value: chance(50) ? .null : .object(["meta": .string("m")]))
            }
            return try! Record.make(body: .write([pair]), clock: clock, signer: author)
        }

        mutating func query() -> FirebaseQuery {
            let order: FirebaseQuery.Order = pick([.key, .value, .child(try! Path("date")), .child(try! Path("name")),
                                                   .child(try! Path("timestamp")), .child(try! Path("a/b")), .child(try! Path("text"))])
            var query = FirebaseQuery(order: order)
            func bound() -> JSONValue {
                if case .key = order { return .string(pick(keys + ["", "1\u{301}", "e\u{301}t\u{E9}"] + (allKeys ? ["\u{FFFF}"] : []))) }
                return pick(IndexedQueryTests.scalars + [.number(3), .number(5)])
            }
            if chance(20) {
                query.equalTo = bound()
            } else {
                if chance(40) { query.startAt = bound() }
                if chance(40) { query.endAt = bound() }
            }
            if chance(70) {
                let count = Int(rng.next() % 6)
                query.limit = chance(50) ? .first(count) : .last(count)
            }
            // Key bounds arrive in NFC from `parse`.
            if case .key = order {
                func nfc(_ value: JSONValue?) -> JSONValue? { value.map { if case .string(let s) = $0 { .string(CanonicalText.nfc(s)) } else { $0 } } }
                query.startAt = nfc(query.startAt)
                query.endAt = nfc(query.endAt)
                query.equalTo = nfc(query.equalTo)
            }
            return query
        }
    }

    /// A third of the seeds write and ask for every kind of key from the start; a third only keys
    /// that sort as their bytes for four rounds, then every kind (the list's key ordering is
    /// declared and built then, mid-way); a third never any other.
    @Test("index-backed queries equal the full read filtered", arguments: 0..<40)
    func queriesEqualReference(seed: UInt64) throws {
        let store = try memoryStore()
        var generator = Generator(rng: SplitMix64(seed: seed), authors: testAuthors)
        var clock: UInt64 = 1_700_000_000_000 << 16
        let locations = try ["/conversations/c1/messages", "/users", "/open", "/conversations/c1", "/conversations/c2/messages"].map { try Path($0) }
        let allKeysFrom = [0, 4, 8][Int(seed % 3)]
        for round in 0..<8 {
            generator.allKeys = round >= allKeysFrom
            for _ in 0..<(round == 0 ? 30 : 8) {
                // Mostly in write order, sometimes an older write arriving late.
                clock += generator.chance(80) ? 1 << 16 : 0
                let stamp = generator.chance(15) ? clock - (generator.rng.next() % 20) << 16 : clock
                _ = try store.ingest([generator.record(clock: stamp)], nowMillis: farFuture)
            }
            for location in locations {
                let whole = try store.value(at: location)
                #expect(try store.shallowValue(at: location) == shallow(whole), "seed \(seed) round \(round) shallow \(location)")
                for _ in 0..<6 {
                    let query = generator.query()
                    let expected = query.apply(to: whole)
                    let actual = try store.query(query, at: location)
                    #expect(actual == expected, "seed \(seed) round \(round) \(location) \(query)\nexpected \(expected)\nactual   \(actual)")
                }
            }
        }
        // The zone lists were answered from indexes, not only by the fallback; by key from their
        // zones while every key sorted as its bytes.
        #expect(try store.db.scalarInt("SELECT count(*) FROM zone_orders") ?? 0 > 0)
        if allKeysFrom == 8 { #expect(try store.db.scalarInt("SELECT count(*) FROM zone_orders WHERE field = '$key'") == 0) }
    }

    @Test("the tree rebuild fills the order indexes again")
    func rebuildRefills() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let path = dir.path + "/store.sqlite"
        var generator = Generator(rng: SplitMix64(seed: 99), authors: testAuthors)
        let list = try Path("/conversations/c1/messages")
        let query = FirebaseQuery(order: .child(try Path("date")), limit: .last(3))
        var expected = JSONValue.null
        do {
            let store = try Store(path: path)
            for i in 0..<60 { _ = try store.ingest([generator.record(clock: (1_700_000_000_000 + UInt64(i)) << 16)], nowMillis: farFuture) }
            expected = query.apply(to: try store.value(at: list))
            #expect(try store.query(query, at: list) == expected)
            let rows = try store.db.scalarInt("SELECT count(*) FROM zone_order_rows") ?? 0
            #expect(rows > 0)
            try store.db.run("INSERT OR REPLACE INTO meta(key, value) VALUES ('tree_rebuild', 1)")
        }
        let store = try Store(path: path)
        #expect(try store.db.scalarInt("SELECT count(*) FROM meta WHERE key = 'tree_rebuild'") == 0)
        #expect(try store.db.scalarInt("SELECT count(*) FROM zone_order_rows") ?? 0 > 0)
        #expect(try store.query(query, at: list) == expected)
        #expect(expected != .null)
    }

    /// Queries may declare the orderings of a list up to one short of the bound; the last place
    /// is the key ordering's, which an integer key declares later: the list never holds more
    /// than `maxOrdersPerList`, and every query, indexed or read whole, equals the reference.
    @Test("a list's orderings stay within the bound when a key declares the key ordering late")
    func keyOrderingKeepsItsPlace() throws {
        let store = try memoryStore()
        let author = testAuthors[0]
        let uid = author.publicKey.userID
        let list = try Path("/conversations/c1/messages")
        var clock: UInt64 = 1_700_000_000_000 << 16
        func message(_ key: String, _ i: Int) throws -> Record {
            clock += 1 << 16
            let fields: [String: JSONValue] = ["senderId": .string(uid), "text": .string("m\(i)"), "f\(i % 10)": .number(Double(i))]
            return try Record.make(body: .write([WritePair(path: try list.appending(key), value: .object(fields))]), clock: clock, signer: author)
        }
        for i in 0..<20 { _ = try store.ingest([message("-N\(i)", i)], nowMillis: farFuture) }
        let fields: [FirebaseQuery.Order] = [.value] + (0..<10).map { .child(try! Path("f\($0)")) }
        for order in fields {
            let query = FirebaseQuery(order: order, limit: .last(3))
            #expect(try store.query(query, at: list) == query.apply(to: try store.value(at: list)), "\(order)")
        }
        let listKey = StoreKey.of(list)
        #expect(try store.db.scalarInt("SELECT count(*) FROM zone_orders WHERE list = ?", [.text(listKey)]) == Int64(ZoneOrders.maxOrdersPerList - 1))
        _ = try store.ingest([message("7", 7)], nowMillis: farFuture)
        #expect(try store.db.scalarInt("SELECT count(*) FROM zone_orders WHERE list = ?", [.text(listKey)]) == Int64(ZoneOrders.maxOrdersPerList))
        for order in fields + [.key] {
            let query = FirebaseQuery(order: order, limit: .first(4))
            #expect(try store.query(query, at: list) == query.apply(to: try store.value(at: list)), "\(order)")
        }
    }

    /// The orderings a store remembers per list (`ZoneOrderCache`) follow a rolled-back
    /// transaction: the list it declared an ordering for has none, and the id SQLite hands out
    /// again to the next list's ordering is not taken for the first list's.
    @Test("a rolled-back declaration of an ordering is forgotten")
    func rolledBackDeclarationForgotten() throws {
        struct Abort: Error {}
        let store = try memoryStore()
        let author = testAuthors[0]
        let uid = author.publicKey.userID
        var clock: UInt64 = 1_700_000_000_000 << 16
        func message(_ cid: String, _ key: String) throws -> Record {
            clock += 1 << 16
            let path = try Path(segments: ["conversations", cid, "messages", key])
            return try Record.make(body: .write([WritePair(path: path, value: .object(["senderId": .string(uid), "text": .string(cid + key)]))]),
                                   clock: clock, signer: author)
        }
        // Integer keys do not sort as their bytes: the first one declares its list's key ordering.
        _ = try store.ingest([message("c1", "1")], nowMillis: farFuture)
        #expect(throws: Abort.self) {
            try store.transaction {
                _ = try store.ingest([message("c2", "1")], nowMillis: farFuture)
                throw Abort()
            }
        }
        #expect(try store.db.scalarInt("SELECT count(*) FROM zone_orders WHERE list LIKE '%c2%'") == 0)
        // c3 now gets the id c2's ordering had; c2's next message must not write under it.
        _ = try store.ingest([message("c3", "1")], nowMillis: farFuture)
        _ = try store.ingest([message("c2", "26")], nowMillis: farFuture)
        _ = try store.ingest([message("c3", "2")], nowMillis: farFuture)
        // Every list has its key ordering from its first integer key on, none read from another's.
        #expect(try store.db.scalarInt("SELECT count(*) FROM zone_orders") == 3)
        let query = FirebaseQuery(order: .key, limit: .last(1))
        for cid in ["c1", "c2", "c3"] {
            let list = try Path(segments: ["conversations", cid, "messages"])
            let expected = query.apply(to: try store.value(at: list))
            #expect(expected != .null)
            #expect(try store.query(query, at: list) == expected, "\(cid)")
        }
    }
}
