import Crypto
import Testing
import Tree
import Wire
@testable import Store
import TestSupport

/// Far enough in the future that no generated record is refused for clock drift.
let farFuture: UInt64 = 1_800_000_000_000

let testAuthors = (0..<3).map { i in try! PrivateKey(seedBytes: [UInt8](repeating: UInt8(i + 1), count: 32)) }

func memoryStore() throws -> Store { try Store(path: ":memory:") }

@Suite("Merge")
struct MergeTests {
    @Test("every arrival order, with duplicates, materializes the model's tree", arguments: 0..<200)
    func orderIndependence(seed: UInt64) throws {
        var generator = RecordGenerator(seed: seed, authors: testAuthors)
        let records = (0..<24).map { _ in generator.record() }
        let expected = MergeModel.tree(of: records)
        var rng = SplitMix64(seed: seed ^ 0xABCDEF)
        for round in 0..<4 {
            var arrival = records.shuffled(using: &rng)
            // Duplicates: some records arrive again later.
            arrival += records.shuffled(using: &rng).prefix(Int(rng.next() % 6))
            // Rounds 2 and 3 take the records as a peer's arrive: decoded from their bytes, a
            // message's value held in them (`WritePair`) and read member by member by the rules.
            if round >= 2 { arrival = try arrival.map { try Record.decode($0.encoded) } }
            let store = try memoryStore()
            if round % 2 == 0 {
                for r in arrival { _ = try store.ingest([r], nowMillis: farFuture) }
            } else {
                _ = try store.ingest(arrival, nowMillis: farFuture)
            }
            let actual = try store.value(at: .root)
            #expect(actual == expected, "seed \(seed) round \(round)\nexpected \(expected.serialized())\nactual   \(actual.serialized())")
            // Subtree reads agree with the model too.
            for path in ["/a", "/users", "/conversations/c1/messages", "/a/b"] {
                let p = try Path(path)
                #expect(try store.value(at: p) == expected.value(at: p), "seed \(seed) path \(path)")
            }
        }
    }

    @Test("applying a record twice changes nothing")
    func idempotent() throws {
        var generator = RecordGenerator(seed: 7, authors: testAuthors)
        let records = (0..<30).map { _ in generator.record() }
        let store = try memoryStore()
        let first = try store.ingest(records, nowMillis: farFuture)
        let before = try store.value(at: .root)
        let second = try store.ingest(records, nowMillis: farFuture)
        #expect(first.added == Set(records).count)
        #expect(second.added == 0 && second.duplicates == records.count)
        #expect(try store.value(at: .root) == before)
        #expect(try store.recordCount() == Set(records).count)
    }

    @Test("a profile written by someone else is stored but has no effect")
    func foreignProfileWrite() throws {
        let (alice, mallory) = (testAuthors[0], testAuthors[1])
        let store = try memoryStore()
        let profile = try Path(segments: ["users", alice.publicKey.userID])
        try store.set(profile, to: ["first_name": "Alice"], signer: alice, nowMillis: 1_000)
        let forged = try Record.make(body: .write([WritePair(path: try profile.appending("first_name"), value: "Mallory")]),
                                     clock: 5_000 << 16, signer: mallory)
        let report = try store.ingest([forged], nowMillis: 10_000)
        #expect(report.added == 1)
        #expect(try store.value(at: profile) == ["first_name": "Alice"])
        // Nor can a write at /users reach into a profile.
        try store.set(try Path("/users"), to: .null, signer: mallory, nowMillis: 20_000)
        #expect(try store.value(at: profile) == ["first_name": "Alice"])
    }

    @Test("a message at a key bound to no one belongs to its only claimant; a second claimant hides it in every order")
    func unboundMessageOwnership() throws {
        let (alice, bob) = (testAuthors[0], testAuthors[1])
        let message = try Path("/conversations/c/messages/m")
        let aliceWrite = try Record.make(body: .write([WritePair(path: message, value: ["senderId": .string(alice.publicKey.userID), "text": "hi"])]),
                                         clock: 2_000 << 16, signer: alice)
        let aliceEdit = try Record.make(body: .write([WritePair(path: try message.appending("text"), value: "hi!")]),
                                        clock: 2_100 << 16, signer: alice)
        let bobSpoofSender = try Record.make(body: .write([WritePair(path: message, value: ["senderId": .string(alice.publicKey.userID), "text": "x"])]),
                                             clock: 1_000 << 16, signer: bob)
        let aliceSpoof = try Record.make(body: .write([WritePair(path: try Path("/conversations/c/messages/n"), value: ["senderId": .string(bob.publicKey.userID), "text": "spoof"])]),
                                         clock: 2_500 << 16, signer: alice)
        let bobClaim = try Record.make(body: .write([WritePair(path: message, value: ["senderId": .string(bob.publicKey.userID), "text": "bob first"])]),
                                       clock: 1_000 << 16, signer: bob)

        let store = try memoryStore()
        _ = try store.ingest([aliceWrite, aliceEdit, bobSpoofSender, aliceSpoof], nowMillis: 10_000)
        // A pair that breaks the senderId rule claims nothing; a spoofed senderId shows nothing.
        #expect(try store.value(at: message) == ["senderId": .string(alice.publicKey.userID), "text": "hi!"])
        #expect(try store.value(at: try Path("/conversations/c/messages/n")) == .null)
        // A second author claims the key, earlier in write order: nobody owns it, in every order.
        _ = try store.ingest([bobClaim], nowMillis: 10_000)
        #expect(try store.value(at: message) == .null)
        let other = try memoryStore()
        _ = try other.ingest([bobClaim, aliceEdit, aliceWrite, aliceSpoof, bobSpoofSender], nowMillis: 10_000)
        #expect(try other.value(at: .root) == store.value(at: .root))
        // The same as a peer's records arrive (decoded from their bytes, messages held in them).
        let received = try memoryStore()
        _ = try received.ingest(try [aliceWrite, aliceEdit, bobSpoofSender, aliceSpoof].map { try Record.decode($0.encoded) }, nowMillis: 10_000)
        #expect(try received.value(at: message) == ["senderId": .string(alice.publicKey.userID), "text": "hi!"])
        #expect(try received.value(at: try Path("/conversations/c/messages/n")) == .null)
    }

    @Test("a record stamped too far ahead is refused for now")
    func driftBound() throws {
        let future = try Record.make(body: .write([WritePair(path: try Path("/a"), value: 1)]),
                                     clock: (1_000_000 + 10 * 60 * 1000) << 16, signer: testAuthors[0])
        let store = try memoryStore()
        let report = try store.ingest([future], nowMillis: 1_000_000)
        #expect(report.added == 0 && report.refused.count == 1)
        #expect(try store.recordCount() == 0)
        #expect(try store.ingest([future], nowMillis: 1_000_000 + 10 * 60 * 1000).added == 1)
    }
}
