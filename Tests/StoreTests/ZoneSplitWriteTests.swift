import Crypto
import Testing
import Tree
import Wire
@testable import Store
import TestSupport

/// A set or delete above protected zones is split by the writer into a pair at its path and one
/// at each zone it carries or clears (Protocol.md §5.4), and such a write is one valid record:
/// a path in the open zone may lie above a path in a zone (§3.4). Before that rule, a user could
/// neither delete a conversation holding their own messages nor set a conversation together
/// with its messages: the record was refused as nested.
@Suite("Writes split at zone roots")
struct ZoneSplitWriteTests {
    let alice = testAuthors[0]
    let bob = testAuthors[1]
    let now: UInt64 = 1_700_000_000_000

    func message(_ author: PrivateKey, _ text: String) -> JSONValue {
        ["senderId": .string(author.publicKey.userID), "text": .string(text)]
    }

    @Test("a conversation set with its messages is one record that every node folds alike")
    func setCarryingMessages() throws {
        let store = try memoryStore()
        let value: JSONValue = ["title": "Lunch", "messages": ["m1": message(alice, "hi"), "m2": message(alice, "there")]]
        let record = try store.set(try Path("/conversations/c"), to: value, signer: alice, nowMillis: now)
        guard case let .write(pairs) = record.body else { Issue.record("not a write: \(record.body)"); return }
        #expect(pairs.map(\.path.storageKey) == ["/conversations/c", "/conversations/c/messages/m1", "/conversations/c/messages/m2"])
        #expect(try store.value(at: try Path("/conversations/c")) == value)
        let peer = try memoryStore()
        #expect(try peer.ingest([try Record.decode(record.encoded)], nowMillis: now).added == 1, "a peer takes the record as valid")
        #expect(try peer.value(at: try Path("/conversations/c")) == value)
    }

    @Test("deleting a conversation clears the writer's own messages and leaves another member's")
    func deleteClearsOwnMessages() throws {
        let store = try memoryStore()
        let list = try Path("/conversations/c/messages")
        try store.set(try Path("/conversations/c/title"), to: "Lunch", signer: alice, nowMillis: now)
        let (own, _) = try store.push(list, value: message(alice, "mine"), signer: alice, nowMillis: now + 1)
        let (other, bobsRecord) = try store.push(list, value: message(bob, "bob's"), signer: bob, nowMillis: now + 2)
        let deletion = try store.delete(try Path("/conversations/c"), signer: alice, nowMillis: now + 3)
        #expect(try store.value(at: try list.appending(own)) == .null)
        #expect(try store.value(at: try Path("/conversations/c/title")) == .null)
        #expect(try store.value(at: try list.appending(other)) == message(bob, "bob's"), "only its owner deletes a message")
        // A peer holding Bob's message and the deletion shows the same.
        let peer = try memoryStore()
        _ = try peer.ingest([bobsRecord, try Record.decode(deletion.encoded)], nowMillis: now + 4)
        #expect(try peer.value(at: try Path("/conversations/c")) == ["messages": [other: message(bob, "bob's")]])
    }

    @Test("nesting stays refused within one zone and within the open zone")
    func nestingWithinAZoneRefused() throws {
        func make(_ paths: [String]) throws -> Record {
            let pairs = try paths.map { WritePair(path: try Path($0), value: "x") }
            return try Record.make(body: .write(pairs), clock: now << 16, signer: alice)
        }
        for paths in [["/a", "/a/b"], ["/conversations/c/messages/m", "/conversations/c/messages/m/text"],
                      ["/users/\(alice.publicKey.userID)", "/users/\(alice.publicKey.userID)/name"]] {
            #expect(throws: RecordError.self, "\(paths)") { try make(paths) }
        }
        _ = try make(["/conversations", "/conversations/c/messages/m"])
        _ = try make(["/", "/users/\(alice.publicKey.userID)"])
    }
}
