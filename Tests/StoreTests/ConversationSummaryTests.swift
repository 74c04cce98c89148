import Crypto
import Testing
import Tree
import Wire
@testable import Store
import TestSupport

/// Conversation summaries (`Store.conversationSummaries`) against a reference worked out from the
/// conversation read whole (`Store.value(at:)`), under adds, edits, deletes, older writes arriving
/// late and a rebuild; and equal on stores that took the same records in other orders.
@Suite("Conversation summaries")
struct ConversationSummaryTests {
    let alice = testAuthors[0]
    let bob = testAuthors[1]
    let carol = testAuthors[2]
    var me: String { alice.publicKey.userID }

    /// Who wrote each message first (its owner, unless another member made it disputed), for a
    /// message that lost its senderId: an edit ordered after its delete leaves only the edited field.
    /// The summary as the spec of a conversation list says it: the last message is the one with
    /// the greatest key; unread are the messages after the read mark that are not mine (by
    /// senderId, or by who wrote the message first when it has none).
    func reference(_ store: Store, _ id: String, creators: [String: String] = [:]) throws -> ConversationSummary? {
        let whole = try store.value(at: Path(segments: ["conversations", id]))
        guard case let .object(fields) = whole else { return nil }
        var summary = ConversationSummary(id: id, unread: 0)
        if case let .object(meta)? = fields["meta"], case let .string(title)? = meta["title"] { summary.title = ConversationSummary.cut(title) }
        summary.readKey = try store.readMark(id)
        if case let .object(messages)? = fields["messages"] {
            let keys = messages.keys.sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }
            if let last = keys.last {
                summary.lastKey = last
                summary.last = ConversationSummary.preview(messages[last]!)
            }
            let after = keys.filter { key in summary.readKey.map { Array($0.utf8).lexicographicallyPrecedes(Array(key.utf8)) } ?? true }
            let others = after.filter { key in
                guard case let .object(m)? = messages[key], case let .string(sender)? = m["senderId"] else { return creators[key] != me }
                return sender != me
            }
            summary.unread = min(others.count, ConversationSummary.maxUnread)
        }
        return summary
    }

    func message(_ author: PrivateKey, _ text: String, date: Double) -> JSONValue {
        .object(["senderId": .string(author.publicKey.userID), "senderName": "n", "text": .string(text), "date": .number(date)])
    }

    func write(_ author: PrivateKey, _ path: [String], _ value: JSONValue, clock: UInt64) throws -> Record {
        try Record.make(body: .write([WritePair(path: Path(segments: path), value: value)]), clock: clock << 16, signer: author)
    }

    /// A random history of a few conversations: messages from three authors (keys in time order,
    /// some clocks older than their keys), edits of their text, deletes, titles, and writes by a
    /// member who is not the owner (which take no effect).
    func history(seed: UInt64, count: Int) throws -> (records: [Record], creators: [String: String]) {
        var rng = SplitMix64(seed: seed)
        var records: [Record] = []
        var keys: [(String, String, PrivateKey)] = []
        var creators: [String: String] = [:]
        let authors = [alice, bob, carol]
        for i in 0..<count {
            let clock = 1_700_000_000_000 + UInt64(i) * 10 - (rng.next() % 4 == 0 ? rng.next() % 200 : 0)
            let conversation = ["c1", "c2", "c3"][Int(rng.next() % 3)]
            let author = authors[Int(rng.next() % 3)]
            switch rng.next() % 10 {
            case 0...5:
                let key = String(format: "m%05d", i)
                keys.append((conversation, key, author))
                creators[key] = author.publicKey.userID
                records.append(try write(author, ["conversations", conversation, "messages", key], message(author, "text \(i)", date: Double(i)), clock: clock))
            case 6 where !keys.isEmpty:
                let (c, key, owner) = keys[Int(rng.next() % UInt64(keys.count))]
                let editor = rng.next() % 4 == 0 ? authors[Int(rng.next() % 3)] : owner
                records.append(try write(editor, ["conversations", c, "messages", key, "text"], .string("edited \(i)"), clock: clock))
            case 7 where !keys.isEmpty:
                // Deleted for good: an edit after it would make a message without a senderId.
                let (c, key, owner) = keys.remove(at: Int(rng.next() % UInt64(keys.count)))
                records.append(try write(owner, ["conversations", c, "messages", key], .null, clock: clock))
            case 8:
                // Mostly a string title; sometimes a title of another type, or a meta that is not an object.
                let title: JSONValue = [.string("Title \(i)"), .string("Title \(i)"), .number(3), .object(["x": .string("y")])][Int(rng.next() % 4)]
                if rng.next() % 5 == 0 {
                    records.append(try write(author, ["conversations", conversation, "meta"], .string("flat"), clock: clock))
                } else {
                    records.append(try write(author, ["conversations", conversation, "meta", "title"], title, clock: clock))
                }
            default:
                records.append(try write(author, ["conversations", conversation, "meta", "members", author.publicKey.userID], true, clock: clock))
            }
        }
        return (records, creators)
    }

    func check(_ store: Store, _ note: String, creators: [String: String]) throws {
        let summaries = try store.conversationSummaries(me: me)
        let ids = try store.childKeys(of: Path("/conversations"))
        #expect(summaries.map(\.id) == ids.filter { (try? reference(store, $0, creators: creators)) != nil }, "\(note)")
        for summary in summaries {
            let expected = try reference(store, summary.id, creators: creators)
            #expect(summary == expected, "\(note) \(summary.id)\nexpected \(String(describing: expected))\nactual   \(summary)")
        }
    }

    @Test("summaries equal the reference as messages are added, edited and deleted, in any arrival order", arguments: 0..<24)
    func randomHistories(seed: UInt64) throws {
        let (records, creators) = try history(seed: seed, count: 160)
        let store = try memoryStore()
        var rng = SplitMix64(seed: seed ^ 0x5EED)
        for (index, record) in records.enumerated() {
            _ = try store.ingest([record], nowMillis: farFuture)
            if index % 20 == 19 {
                // Read marks at a random message key, some before, some after the last.
                try store.markRead(["c1", "c2", "c3"][Int(rng.next() % 3)], upTo: String(format: "m%05d", Int(rng.next() % 160)))
                try check(store, "seed \(seed) after \(index + 1) records", creators: creators)
            }
        }
        try check(store, "seed \(seed) at the end", creators: creators)

        // The same records in reverse and shuffled orders give the same summaries.
        var shuffled = records
        shuffled.shuffle(using: &rng)
        for order in [Array(records.reversed()), shuffled] {
            let other = try memoryStore()
            for record in order { _ = try other.ingest([record], nowMillis: farFuture) }
            for id in ["c1", "c2", "c3"] {
                if let mark = try store.readMark(id) { try other.markRead(id, upTo: mark) }
            }
            #expect(try other.conversationSummaries(me: me) == store.conversationSummaries(me: me), "seed \(seed)")
        }
    }

    @Test("the last message follows an edit, a delete and an older message arriving late")
    func lastMessage() throws {
        let store = try memoryStore()
        let list = ["conversations", "c", "messages"]
        // Keys bound to their authors, so that another member's write to them takes no effect.
        let m1 = MessageKey.bind("-AAAAAAAAAAAAAAAAAA1", to: alice.publicKey.userID)
        let m2 = MessageKey.bind("-AAAAAAAAAAAAAAAAAA2", to: bob.publicKey.userID)
        let m3 = MessageKey.bind("-AAAAAAAAAAAAAAAAAA3", to: bob.publicKey.userID)
        _ = try store.ingest([try write(bob, list + [m2], message(bob, "second", date: 2), clock: 1_700_000_000_010)], nowMillis: farFuture)
        var summary = try #require(try store.conversationSummary("c", me: me))
        #expect(summary.lastKey == m2 && summary.unread == 1)
        #expect(summary.last == .object(["senderId": .string(bob.publicKey.userID), "senderName": "n", "text": "second", "date": 2]))
        // An older message (smaller key, earlier clock) arriving late is not the last one.
        _ = try store.ingest([try write(alice, list + [m1], message(alice, "first", date: 1), clock: 1_700_000_000_001)], nowMillis: farFuture)
        summary = try #require(try store.conversationSummary("c", me: me))
        #expect(summary.lastKey == m2 && summary.unread == 1)  // alice's own message is never unread
        // An edit of the last message shows; an edit by someone else does not.
        _ = try store.ingest([try write(bob, list + [m2, "text"], "second, edited", clock: 1_700_000_000_020)], nowMillis: farFuture)
        _ = try store.ingest([try write(carol, list + [m2, "text"], "hijacked", clock: 1_700_000_000_030)], nowMillis: farFuture)
        summary = try #require(try store.conversationSummary("c", me: me))
        if case let .object(fields)? = summary.last { #expect(fields["text"] == "second, edited") } else { Issue.record("no last message") }
        // Deleting the last message makes the one before it the last.
        _ = try store.ingest([try write(bob, list + [m2], .null, clock: 1_700_000_000_040)], nowMillis: farFuture)
        summary = try #require(try store.conversationSummary("c", me: me))
        #expect(summary.lastKey == m1 && summary.unread == 0)
        // A huge text makes a small summary.
        _ = try store.ingest([try write(bob, list + [m3], message(bob, String(repeating: "é", count: 50_000), date: 3), clock: 1_700_000_000_050)],
                             nowMillis: farFuture)
        summary = try #require(try store.conversationSummary("c", me: me))
        #expect(summary.json.serialized().utf8.count < 1_000)
    }

    @Test("read marks only move forward, count unread up to the cap, and refuse what is not a key")
    func readMarks() throws {
        let store = try memoryStore()
        var records: [Record] = []
        for i in 0..<150 {
            records.append(try write(bob, ["conversations", "c", "messages", String(format: "m%03d", i)], message(bob, "\(i)", date: Double(i)),
                                     clock: 1_700_000_000_000 + UInt64(i)))
        }
        _ = try store.ingest(records, nowMillis: farFuture)
        #expect(try store.conversationSummary("c", me: me)?.unread == ConversationSummary.maxUnread)
        // Bob's own messages are never unread for him.
        #expect(try store.conversationSummary("c", me: bob.publicKey.userID)?.unread == 0)
        #expect(try store.markRead("c", upTo: "m099"))
        #expect(try store.conversationSummary("c", me: me)?.unread == 50)
        #expect(try store.markRead("c", upTo: "m010") == false)
        #expect(try store.readMark("c") == "m099")
        #expect(try store.markRead("c", upTo: "m149"))
        #expect(try store.conversationSummary("c", me: me)?.unread == 0)
        for bad in ["a/b", "a.b", "", String(repeating: "x", count: 800)] {
            #expect(throws: TreeError.self) { try store.markRead("c", upTo: bad) }
            #expect(throws: TreeError.self) { try store.markRead(bad, upTo: "m1") }
        }
        #expect(try store.readMark("c") == "m149")
    }

    @Test("the tree rebuild leaves the summaries as they were")
    func rebuild() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let path = dir.path + "/store.sqlite"
        let before: [ConversationSummary]
        do {
            let store = try Store(path: path)
            _ = try store.ingest(try history(seed: 7, count: 200).records, nowMillis: farFuture)
            try store.markRead("c2", upTo: "m00100")
            before = try store.conversationSummaries(me: me)
            #expect(before.count == 3)
            try store.db.run("INSERT OR REPLACE INTO meta(key, value) VALUES ('tree_rebuild', 1)")
        }
        let store = try Store(path: path)
        #expect(try store.db.scalarInt("SELECT count(*) FROM meta WHERE key = 'tree_rebuild'") == 0)
        #expect(try store.conversationSummaries(me: me) == before)
        try check(store, "after the rebuild", creators: try history(seed: 7, count: 200).creators)
    }
}
