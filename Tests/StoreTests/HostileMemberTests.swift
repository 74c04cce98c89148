import Crypto
import Testing
import Tree
import Wire
@testable import Store
import TestSupport

/// A member who signs whatever it likes, with any clock within the drift bound (earlier than
/// the victim's, equal, later), cannot change or delete another member's message, profile or
/// file (Protocol.md §5.4, §5.5), whatever order the records arrive in.
@Suite("Hostile members")
struct HostileMemberTests {
    let alice = testAuthors[0]
    let mallory = testAuthors[1]
    let now: UInt64 = 1_700_000_000_000

    /// Mallory's clocks around `clock`: far earlier, one tick earlier, equal, one tick later, and
    /// at the edge of the drift bound.
    func clocks(around clock: UInt64) -> [UInt64] {
        [1 << 16, clock - 1, clock, clock + 1, (now + 299_000) << 16]
    }

    /// Ingests `victim` and `attacks` in several orders into fresh stores; each must show `path`
    /// as the victim's records alone make it.
    func expectUnchanged(_ path: Path, victim: [Record], attacks: [Record], sourceLocation: SourceLocation = #_sourceLocation) throws {
        let reference = try memoryStore()
        _ = try reference.ingest(victim, nowMillis: now)
        let expected = try reference.value(at: path)
        #expect(expected != .null, sourceLocation: sourceLocation)
        var rng = SplitMix64(seed: 42)
        // Also as a peer's records arrive: decoded from their bytes, with a message's value held
        // in them (`WritePair`), which the rules then read member by member.
        for received in [false, true] {
            for order in [victim + attacks, attacks + victim, (victim + attacks).shuffled(using: &rng), (attacks + victim).shuffled(using: &rng)] {
                let store = try memoryStore()
                for record in order { _ = try store.ingest([received ? try Record.decode(record.encoded) : record], nowMillis: now) }
                #expect(try store.value(at: path) == expected, sourceLocation: sourceLocation)
                #expect(try store.recordCount() == victim.count + attacks.count, "every valid record is kept", sourceLocation: sourceLocation)
            }
        }
    }

    @Test("a pushed message gets a key bound to its author")
    func pushedKeysAreBound() throws {
        let store = try memoryStore()
        let (key, _) = try store.push(try Path("/conversations/c/messages"), value: ["senderId": .string(alice.publicKey.userID), "text": "hi"],
                                      signer: alice, nowMillis: now)
        #expect(key.utf8.count == 32)
        #expect(MessageKey.isBound(key, to: alice.publicKey.userID))
        #expect(!MessageKey.isBound(key, to: mallory.publicKey.userID))
        #expect(MergeModel.bound(key, alice.publicKey.userID), "the model's reading of the rule agrees")
        // Elsewhere a push id is Firebase's 20 characters.
        #expect(try store.push(try Path("/todo"), value: "milk", signer: alice, nowMillis: now).key.utf8.count == 20)
    }

    @Test("no clock lets a member take over, edit or delete another's message")
    func messageTakeover() throws {
        let source = try memoryStore()
        let (key, created) = try source.push(try Path("/conversations/c/messages"),
                                             value: ["senderId": .string(alice.publicKey.userID), "senderName": "Alice", "text": "hi"],
                                             signer: alice, nowMillis: now)
        let message = try Path(segments: ["conversations", "c", "messages", key])
        let edited = try source.set(try message.appending("text"), to: "hi, all", signer: alice, nowMillis: now + 1)
        var attacks = [Record]()
        for clock in clocks(around: created.clock) {
            let writes: [[WritePair]] = [
                [WritePair(path: message, value: ["senderId": .string(mallory.publicKey.userID), "senderName": "Alice", "text": "evil"])],
                [WritePair(path: message, value: ["senderId": .string(alice.publicKey.userID), "text": "forged"])],
                [WritePair(path: message, value: .null)],
                [WritePair(path: try message.appending("text"), value: "evil")],
                [WritePair(path: try message.appending("senderId"), value: .string(mallory.publicKey.userID))],
            ]
            for pairs in writes { attacks.append(try Record.make(body: .write(pairs), clock: clock, signer: mallory)) }
        }
        // Through the open zone too: replacing or deleting the conversation leaves the message.
        attacks.append(try Record.make(body: .write([WritePair(path: try Path("/conversations/c"), value: .null)]), clock: (now + 299_000) << 16, signer: mallory))
        attacks.append(try Record.make(body: .write([WritePair(path: try Path("/conversations"), value: ["c": ["messages": [key: ["senderId": .string(mallory.publicKey.userID), "text": "evil"]]]])]),
                                       clock: (now + 299_000) << 16, signer: mallory))
        try expectUnchanged(message, victim: [created, edited], attacks: attacks)
        // The owner still edits and deletes it.
        let store = try memoryStore()
        _ = try store.ingest([created, edited] + attacks, nowMillis: now)
        #expect(try store.value(at: message.appending("text")) == "hi, all")
        try store.delete(message, signer: alice, nowMillis: now + 300_000)
        #expect(try store.value(at: message) == .null)
        // And the local API refuses the attacker's writes instead of signing them.
        let attacker = try memoryStore()
        _ = try attacker.ingest([created], nowMillis: now)
        #expect(throws: StoreError.self) { try attacker.set(try message.appending("text"), to: "evil", signer: mallory, nowMillis: now) }
    }

    @Test("no clock lets a member change or delete another's profile")
    func profileTakeover() throws {
        let source = try memoryStore()
        let profile = try Path(segments: ["users", alice.publicKey.userID])
        let created = try source.set(profile, to: ["first_name": "Alice", "picture": "images/x.png"], signer: alice, nowMillis: now)
        var attacks = [Record]()
        for clock in clocks(around: created.clock) {
            attacks.append(try Record.make(body: .write([WritePair(path: profile, value: ["first_name": "Mallory"])]), clock: clock, signer: mallory))
            attacks.append(try Record.make(body: .write([WritePair(path: profile, value: .null)]), clock: clock, signer: mallory))
            attacks.append(try Record.make(body: .write([WritePair(path: try Path("/users"), value: .null)]), clock: clock, signer: mallory))
        }
        try expectUnchanged(profile, victim: [created], attacks: attacks)
    }

    @Test("no clock lets a member replace or delete another's file")
    func fileTakeover() throws {
        let source = try memoryStore()
        let path = "images/\(alice.publicKey.userID)_-OAbCdEfGhIjKlMnOpQr.png"
        let image = ImageFixtures.png(width: 2, height: 2) { x, y in (UInt8(x), UInt8(y), 0) }
        let stored = try source.putFile(path, bytes: image, signer: alice, nowMillis: now)
        let victim = try source.records(after: 0).map { try Record.decode($0.bytes) }
        let fileClock = victim.map(\.clock).max()!
        let other = ImageFixtures.png(width: 3, height: 1) { _, _ in (9, 9, 9) }
        let forgedManifest = try Record.make(body: .manifest(Manifest(blob: BLAKE2b.digest256(other), size: UInt64(other.count), contentType: "image/png",
                                                                      chunkSize: 65536, chunks: [BLAKE2b.digest256(other)])),
                                             clock: fileClock, signer: mallory)
        var attacks = [forgedManifest]
        for clock in clocks(around: fileClock) {
            attacks.append(try Record.make(body: .file(FileEntry(path: path, manifest: forgedManifest.id)), clock: clock, signer: mallory))
            attacks.append(try Record.make(body: .file(FileEntry(path: path, manifest: nil)), clock: clock, signer: mallory))
        }
        var rng = SplitMix64(seed: 7)
        for order in [victim + attacks, attacks + victim, (attacks + victim).shuffled(using: &rng)] {
            let store = try memoryStore()
            for record in order { _ = try store.ingest([record], nowMillis: now) }
            #expect(try store.fileInfo(path)?.manifestID == stored.manifestID)
        }
    }
}
