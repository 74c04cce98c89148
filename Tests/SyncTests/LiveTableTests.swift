import Crypto
import Testing
@testable import Sync
import Tree
@testable import Wire

/// The bounds on live values (Protocol.md §5.7, §9), each at its limit and just past it, and the
/// rules of who may write where and which value wins.
@Suite("Live values and their limits")
struct LiveTableTests {
    static let instance: [UInt8] = [1, 2, 3, 4, 5, 6, 7, 8]

    static func typing(_ key: PrivateKey, _ conversation: String, version: UInt64, _ value: JSONValue = true) throws -> LiveValue {
        try LiveValue.signed(by: key, instance: instance, version: version,
                             path: Path(segments: ["conversations", conversation, "typingIndicator", key.publicKey.userID]), value: value)
    }

    static func receipt(_ key: PrivateKey, _ conversation: String, version: UInt64, _ message: String = "-Oa") throws -> LiveValue {
        try LiveValue.signed(by: key, instance: instance, version: version,
                             path: Path(segments: ["conversations", conversation, "readReceipts", key.publicKey.userID]), value: .string(message))
    }

    @Test("a live value's path and value sizes, its encoding, and live values per session message")
    func sizes() throws {
        let key = PrivateKey()
        let base = "/status/\(key.publicKey.userID)/"
        let longest = try Path(base + String(repeating: "p", count: LiveValue.maxPathBytes - base.utf8.count))
        let text = JSONValue.string(String(repeating: "v", count: LiveValue.maxValueBytes - 2))
        let largest = try LiveValue.signed(by: key, instance: Self.instance, version: .max, path: longest, value: text)
        #expect(largest.encoded().count == LiveValue.maxEncodedBytes)
        #expect(try LiveValue.decode(largest.encoded()) == largest)
        #expect(Datagram.live(largest.encoded()).seal(key: NetworkKey.named("t").datagramKey).count == 1195)
        #expect(throws: LiveValueError.self) { try LiveValue.signed(by: key, instance: Self.instance, version: 1, path: Path(longest.description + "q"), value: text) }
        #expect(throws: LiveValueError.self) {
            try LiveValue.signed(by: key, instance: Self.instance, version: 1, path: longest, value: .string(String(repeating: "v", count: LiveValue.maxValueBytes - 1)))
        }
        let full = SessionMessage.live(Array(repeating: [1], count: SessionMessage.maxLiveValues))
        #expect(try SessionMessage.decode(full.encoded()) == full)
        #expect(throws: SessionMessage.DecodeError.self) {
            try SessionMessage.decode(SessionMessage.live(Array(repeating: [1], count: SessionMessage.maxLiveValues + 1)).encoded())
        }
    }

    @Test("only the user a path names may write it; typing needs its node live; replays change nothing")
    func rules() throws {
        var table = LiveTable()
        let alice = PrivateKey(), bob = PrivateKey()
        let forged = try LiveValue.signed(by: alice, instance: Self.instance, version: 5,
                                          path: Path("/conversations/c/typingIndicator/\(bob.publicKey.userID)"), value: true)
        #expect(table.offer(forged, instanceLive: true, now: 0) == .refused("\(alice.publicKey.userID) may not write \(forged.path)"))
        let presence = try LiveValue.signed(by: alice, instance: Self.instance, version: 5, path: Path("/presence/\(alice.publicKey.userID)"), value: true)
        #expect(table.offer(presence, instanceLive: true, now: 0) != .changed(presence.path))
        let typing = try Self.typing(alice, "c", version: 7)
        #expect(table.offer(typing, instanceLive: false, now: 0) == .refused("its node is not live"))
        #expect(table.offer(typing, instanceLive: true, now: 0) == .changed(typing.path))
        #expect(table.offer(try Self.typing(alice, "c", version: 6, .null), instanceLive: true, now: 0) != .changed(typing.path))
        #expect(table.offer(typing, instanceLive: true, now: 0) != .changed(typing.path))  // the same again
        #expect(table.offer(try Self.typing(alice, "c", version: 8, .null), instanceLive: true, now: 0) == .changed(typing.path))
        #expect(table.entries.isEmpty)
        // Receipts: the newest wins whatever the order they come in.
        let older = try Self.receipt(bob, "c", version: 10, "-Oa1"), newer = try Self.receipt(bob, "c", version: 11, "-Oa2")
        #expect(table.offer(newer, instanceLive: false, now: 0) == .changed(newer.path))
        #expect(table.offer(older, instanceLive: false, now: 0) == .refused("not newer than the receipt held"))
        #expect(table.receipt(at: newer.path) == newer)
        #expect(table.forget(alice.publicKey).isEmpty)
    }

    @Test("a relayed typing value is held for its time, renewed by a newer one, and a replay changes nothing")
    func relayed() throws {
        var table = LiveTable()
        let alice = PrivateKey()
        let typing = try Self.typing(alice, "c", version: 7)
        #expect(table.offer(typing, instanceLive: false, relayedFor: 6, now: 100) == .changed(typing.path))
        #expect(table.relayed(alice.publicKey, now: 105.9))
        #expect(!table.relayed(alice.publicKey, now: 106))
        // The same value again (a second relay path, a replay) changes nothing and renews nothing.
        #expect(table.offer(typing, instanceLive: false, relayedFor: 6, now: 104) == .refused("not newer than the last value of its author"))
        #expect(!table.relayed(alice.publicKey, now: 106))
        // A renewal: newer, equal, so the tree shows the same, for another 6 s.
        #expect(table.offer(try Self.typing(alice, "c", version: 8), instanceLive: false, relayedFor: 6, now: 104) == .unchanged)
        #expect(table.relayed(alice.publicKey, now: 109.9) && !table.relayed(alice.publicKey, now: 110))
        // Heard directly, its values are no longer on a relayed time.
        #expect(table.offer(try Self.typing(alice, "c", version: 9), instanceLive: true, now: 105) == .unchanged)
        #expect(!table.relayed(alice.publicKey, now: 105))
        #expect(table.forget(alice.publicKey) == [typing.path])
    }

    @Test("typing and status values held: per author and authors in all")
    func valuesHeld() throws {
        var limits = LiveTable.Limits()
        limits.valuesPerAuthor = 4
        limits.authors = 3
        var table = LiveTable(limits: limits)
        let alice = PrivateKey()
        for i in 0..<4 { #expect(table.offer(try Self.typing(alice, "c\(i)", version: UInt64(i + 1)), instanceLive: true, now: 0) != .refused("4 values held of this author")) }
        #expect(table.offer(try Self.typing(alice, "c4", version: 10), instanceLive: true, now: 0) == .refused("4 values held of this author"))
        #expect(table.offer(try Self.typing(alice, "c0", version: 11, .null), instanceLive: true, now: 0) == .changed(try Path("/conversations/c0/typingIndicator/\(alice.publicKey.userID)")))
        #expect(table.offer(try Self.typing(alice, "c4", version: 12), instanceLive: true, now: 0) != .refused("4 values held of this author"))
        for _ in 0..<2 { #expect(table.offer(try Self.typing(PrivateKey(), "c", version: 1), instanceLive: true, now: 0) != .refused("3 authors held")) }
        #expect(table.offer(try Self.typing(PrivateKey(), "c", version: 1), instanceLive: true, now: 0) == .refused("3 authors held"))
        #expect(table.ephemeralCount == 6)
        #expect(table.forget(alice.publicKey).count == 4)
        #expect(table.offer(try Self.typing(PrivateKey(), "c", version: 1), instanceLive: true, now: 0) != .refused("3 authors held"))
    }

    @Test("live values taken from one author: a burst, then the rate")
    func rate() throws {
        var table = LiveTable()
        let alice = PrivateKey()
        var version: UInt64 = 0
        func flip(at now: Double) throws -> LiveTable.Outcome {
            version += 1
            return table.offer(try Self.typing(alice, "c", version: version, version % 2 == 1 ? true : .null), instanceLive: true, now: now)
        }
        for _ in 0..<Int(table.limits.burst) { #expect(try flip(at: 0) != .refused("more than 20 values a second")) }
        #expect(try flip(at: 0) == .refused("more than 20 values a second"))
        // A second later, 20 more and no more.
        for _ in 0..<20 { #expect(try flip(at: 1) != .refused("more than 20 values a second")) }
        #expect(try flip(at: 1) == .refused("more than 20 values a second"))
    }

    @Test("read receipts held: per author and in all")
    func receiptsHeld() throws {
        var limits = LiveTable.Limits()
        limits.receiptsPerAuthor = 3
        limits.receipts = 5
        var table = LiveTable(limits: limits)
        let alice = PrivateKey(), bob = PrivateKey()
        for i in 0..<3 { #expect(table.offer(try Self.receipt(alice, "c\(i)", version: 1), instanceLive: false, now: 0) != .refused("3 receipts held of this author")) }
        #expect(table.offer(try Self.receipt(alice, "c3", version: 1), instanceLive: false, now: 0) == .refused("3 receipts held of this author"))
        // A newer receipt at a path held replaces it and counts once.
        #expect(table.offer(try Self.receipt(alice, "c0", version: 2, "-Ob"), instanceLive: false, now: 0) != .refused("3 receipts held of this author"))
        for i in 0..<2 { #expect(table.offer(try Self.receipt(bob, "c\(i)", version: 1), instanceLive: false, now: 0) != .refused("5 receipts held")) }
        #expect(table.offer(try Self.receipt(bob, "c2", version: 1), instanceLive: false, now: 0) == .refused("5 receipts held"))
        #expect(table.receipts.count == 5)
    }

    @Test("receipts taken from one author: a burst of one per conversation held, then the rate")
    func receiptRate() throws {
        var limits = LiveTable.Limits()
        limits.receiptsPerAuthor = 10
        var table = LiveTable(limits: limits)
        let alice = PrivateKey()
        var version: UInt64 = 0
        func next(_ conversation: String, at now: Double) throws -> LiveTable.Outcome {
            version += 1
            return table.offer(try Self.receipt(alice, conversation, version: version, "-O\(version)"), instanceLive: false, now: now)
        }
        for i in 0..<10 { #expect(try next("c\(i)", at: 0) != .refused("more than 20 receipts a second")) }
        #expect(try next("c0", at: 0) == .refused("more than 20 receipts a second"))
        // Half a second later: 10 more, then none.
        for _ in 0..<10 { #expect(try next("c1", at: 0.5) != .refused("more than 20 receipts a second")) }
        #expect(try next("c1", at: 0.5) == .refused("more than 20 receipts a second"))
    }
}
