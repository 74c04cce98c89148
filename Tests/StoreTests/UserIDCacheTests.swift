import Crypto
import Testing
import Tree
import Wire
@testable import Store

/// The store names each author by a user id kept in a small cache (`Store.userID(of:)`); the
/// write rules that compare a message's `senderId` or a profile's owner with its author read it
/// there. Many authors, more than the cache holds, must each still be named as themselves.
@Suite("Authors' user ids")
struct UserIDCacheTests {
    @Test("past the cache's size every author is still themselves, and the cache stays bounded")
    func manyAuthors() throws {
        let store = try memoryStore()
        let now: UInt64 = 1_700_000_000_000
        let count = Store.maxRecentUserIDs + 40
        var authors = [PrivateKey]()
        for i in 0..<count {
            var seed = [UInt8](repeating: 7, count: 32)
            seed[0] = UInt8(i & 0xFF)
            seed[1] = UInt8(i >> 8)
            authors.append(try PrivateKey(seedBytes: seed))
        }
        for author in authors {
            #expect(store.userID(of: author.publicKey) == author.publicKey.userID)
        }
        // The first authors were evicted; asked again, they are named rightly once more.
        #expect(store.userID(of: authors[0].publicKey) == authors[0].publicKey.userID)
        #expect(store.recentUserIDCount <= Store.maxRecentUserIDs)

        // Through the write rules: a profile and a message of each of the last authors are
        // theirs, and a message naming another author as its sender is not shown.
        let messages = try Path("/conversations/c/messages")
        for (index, author) in authors.suffix(50).enumerated() {
            _ = try store.set(try Path(segments: ["users", author.publicKey.userID, "first_name"]), to: .string("N\(index)"),
                              signer: author, nowMillis: now + UInt64(index))
            _ = try store.push(messages, value: ["senderId": .string(author.publicKey.userID), "text": "mine"],
                               signer: author, nowMillis: now + UInt64(index))
        }
        let last = authors[count - 1], other = authors[count - 2]
        #expect(try store.value(at: try Path(segments: ["users", last.publicKey.userID, "first_name"])) == "N49")
        guard case let .object(shown) = try store.value(at: messages) else {
            Issue.record("no messages shown")
            return
        }
        #expect(shown.count == 50)
        // Signed by `last`, naming `other` as its sender: stored, and shown nowhere.
        let forged = try messages.appending("-forged0000000000000")
        let record = try Record.make(body: .write([WritePair(path: forged, value: ["senderId": .string(other.publicKey.userID), "text": "forged"])]),
                                     clock: (now + 100) << 16, signer: last)
        #expect(try store.ingest([record], nowMillis: now + 100).added == 1)
        #expect(try store.value(at: forged) == .null, "a message naming another sender is not shown")
        #expect(store.recentUserIDCount <= Store.maxRecentUserIDs)
    }
}
