import Crypto
import Testing
import Tree
import Wire
@testable import Store
import TestSupport

/// Large writes (record kind 4, Protocol.md §3.7): Firebase's sizes (a 10 MB string, an update
/// of 100,000 children) written locally, carried to another store as a record plus chunks, folded
/// there only once every chunk is held, and nothing a kind-1 write could not do.
@Suite("Large writes")
struct LargeWriteTests {
    let alice = testAuthors[0]
    let mallory = testAuthors[1]
    let now: UInt64 = 1_700_000_000_000

    /// Copies the chunks of `record`'s content from `source` into `target`'s chunk store, the
    /// first `count` of them (all when nil), as a fetch from a peer would.
    func copyChunks(of record: Record, from source: Store, to target: Store, count: Int? = nil) throws {
        guard case let .largeWrite(write) = record.body else { Issue.record("not a large write"); return }
        let hashes = write.chunks.prefix(count ?? write.chunks.count)
        let chunks = try hashes.map { (hash: $0, bytes: try #require(try source.chunk($0))[...]) }
        try target.chunkDB.transaction(.immediate) { _ = try target.chunkStore.append(chunks) }
    }

    /// A hand-made large write of `content`, its chunks put in `store`, signed by `signer`.
    func largeWrite(_ content: [UInt8], signer: PrivateKey, clock: UInt64, into store: Store) throws -> Record {
        let (write, parts) = LargeWrite.describing(content, chunkSize: 4096)
        try store.chunkDB.transaction(.immediate) { _ = try store.chunkStore.append(Array(zip(write.chunks, parts))) }
        return try Record.make(body: .largeWrite(write), clock: clock, signer: signer)
    }

    func children(_ count: Int, bytes: Int) -> JSONValue {
        var members = [String: JSONValue]()
        let filler = String(repeating: "x", count: bytes)
        for i in 0..<count { members[String(format: "k%06d", i)] = .object(["n": .number(Double(i)), "text": .string(filler)]) }
        return .object(members)
    }

    @Test("an update of 2,000 children and a 2 MiB string are large writes, read back alike on another store once complete")
    func updateAndStringSync() throws {
        let a = try memoryStore(), b = try memoryStore()
        let update = children(2_000, bytes: 40)
        let patch = try a.update(try Path("/big"), with: update, signer: alice, nowMillis: now)
        #expect(patch.kind == .largeWrite)
        let text = String(repeating: "0123456789abcdef", count: 131_072)  // 2 MiB
        let set = try a.set(try Path("/text"), to: .string(text), signer: alice, nowMillis: now)
        #expect(set.kind == .largeWrite)
        let small = try a.set(try Path("/small"), to: "s", signer: alice, nowMillis: now)
        #expect(small.kind == .write)
        #expect(try a.value(at: try Path("/big")) == update)
        #expect(try a.value(at: try Path("/text")) == .string(text))

        // The records first: nothing of them shows until their chunks are all here.
        _ = try b.ingest([patch, set, small], nowMillis: now)
        #expect(try b.value(at: try Path("/big")) == .null)
        #expect(try b.value(at: try Path("/text")) == .null)
        #expect(try b.value(at: try Path("/small")) == "s")
        #expect(try b.hasPendingLargeWrites)
        guard case let .largeWrite(write) = patch.body else { return }
        #expect(try Set(b.missingLargeWriteChunks()).isSuperset(of: write.chunks))

        // All but one chunk: still nothing (atomic).
        try copyChunks(of: patch, from: a, to: b, count: write.chunks.count - 1)
        #expect(try b.applyCompletedLargeWrites().isEmpty)
        #expect(try b.value(at: try Path("/big")) == .null)

        try copyChunks(of: patch, from: a, to: b)
        try copyChunks(of: set, from: a, to: b)
        #expect(try b.applyCompletedLargeWrites().map(\.id) == [patch.id, set.id])
        #expect(try b.value(at: try Path("/big")) == update)
        #expect(try b.value(at: try Path("/text")) == .string(text))
        #expect(try !b.hasPendingLargeWrites)
    }

    @Test("a large write whose chunks are already held takes effect when its record arrives, and a rebuild folds it again")
    func chunksFirst() throws {
        let a = try memoryStore(), b = try memoryStore()
        let update = children(1_500, bytes: 8)
        let record = try a.update(try Path("/c"), with: update, signer: alice, nowMillis: now)
        try copyChunks(of: record, from: a, to: b)
        _ = try b.ingest([record], nowMillis: now)
        #expect(try b.value(at: try Path("/c")) == update)
        #expect(try !b.hasPendingLargeWrites)
        try b.db.run("INSERT OR REPLACE INTO meta(key, value) VALUES ('tree_rebuild', 1)")
        try b.rebuildTreeIfRequested()
        #expect(try b.value(at: try Path("/c")) == update)
    }

    @Test("a large write into profiles and messages follows the zone rules exactly as a kind-1 write")
    func zonesAsSmallWrites() throws {
        let a = try memoryStore()
        let profile = try Path(segments: ["users", alice.publicKey.userID])
        try a.set(profile, to: ["first_name": "Alice"], signer: alice, nowMillis: now)
        let (key, _) = try a.push(try Path("/conversations/c/messages"),
                                  value: ["senderId": .string(alice.publicKey.userID), "text": "hi"], signer: alice, nowMillis: now)
        let message = try Path("/conversations/c/messages").appending(key)
        let before = try a.value(at: .root)

        // Mallory's large write: 1,200 pairs of her own, plus pairs into Alice's profile and
        // message, with a clock later than Alice's.
        var pairs = (0..<1_200).map { WritePair(path: try! Path("/open/p\($0)"), value: .number(Double($0))) }
        pairs.append(WritePair(path: try profile.appending("first_name"), value: "Mallory"))
        pairs.append(WritePair(path: try message.appending("text"), value: "taken"))
        pairs.append(WritePair(path: try Path("/conversations/c/messages/m2"), value: ["senderId": .string(alice.publicKey.userID), "text": "forged"]))
        pairs.sort { Array($0.path.storageKey.utf8).lexicographicallyPrecedes(Array($1.path.storageKey.utf8)) }
        let hostile = try largeWrite(LargeWriteContent.encode(pairs), signer: mallory, clock: (now + 1000) << 16, into: a)
        let report = try a.ingest([hostile], nowMillis: now)
        #expect(report.added == 1)
        #expect(try a.value(at: profile) == before.child(profile))
        #expect(try a.value(at: message) == before.child(message))
        #expect(try a.value(at: try Path("/conversations/c/messages/m2")) == .null)
        #expect(try a.value(at: try Path("/open/p7")) == 7)  // her open-zone pairs count

        // And her own profile she may write with one.
        let own = try Path(segments: ["users", mallory.publicKey.userID])
        let ownPairs = (0..<1_001).map { WritePair(path: try! own.appending(String(format: "f%04d", $0)), value: "v") }
        let mine = try largeWrite(LargeWriteContent.encode(ownPairs), signer: mallory, clock: (now + 2000) << 16, into: a)
        _ = try a.ingest([mine], nowMillis: now)
        #expect(try a.value(at: try own.appending("f1000")) == "v")
    }

    static let invalidKinds = [
        "not CBOR", "pairs out of order", "ten million pairs claimed", "nesting too deep", "trailing bytes",
        "an invalid path", "nested paths", "content hash mismatch", "a null member",
    ]

    @Test("a large write whose content is not a valid write is stored and changes nothing", arguments: invalidKinds)
    func invalidContent(_ kind: String) throws {
        let store = try memoryStore()
        try store.set(try Path("/keep"), to: "kept", signer: alice, nowMillis: now)
        let before = try store.value(at: .root)
        let valid = LargeWriteContent.encode([WritePair(path: try Path("/a"), value: 1), WritePair(path: try Path("/b"), value: 2)])
        var content: [UInt8]
        switch kind {
        case "not CBOR": content = [0xFF, 0x00, 0x13]
        case "pairs out of order":
            content = CBOR.array([.array([.text("/b"), .unsigned(1)]), .array([.text("/a"), .unsigned(2)])]).encoded()
        case "ten million pairs claimed":
            content = [0x9A, 0x00, 0x98, 0x96, 0x80] + Array(repeating: 0x82, count: 64)
        case "nesting too deep":
            var value = CBOR.unsigned(1)
            for i in 0..<60 { value = .map([CBORPair(.text("k\(i)"), value)]) }
            content = CBOR.array([.array([.text("/deep"), value])]).encoded()
        case "trailing bytes": content = valid + [0x00]
        case "an invalid path": content = CBOR.array([.array([.text("/a.b"), .unsigned(1)])]).encoded()
        case "nested paths":
            content = CBOR.array([.array([.text("/a"), .unsigned(1)]), .array([.text("/a/b"), .unsigned(2)])]).encoded()
        case "a null member":
            content = CBOR.array([.array([.text("/a"), .map([CBORPair(.text("x"), .null)])])]).encoded()
        default:
            content = valid
        }
        var record = try largeWrite(content, signer: alice, clock: (now + 5) << 16, into: store)
        if kind == "content hash mismatch" {
            guard case let .largeWrite(write) = record.body else { return }
            let lying = LargeWrite(content: BLAKE2b.digest256([1, 2, 3]), size: write.size, chunkSize: write.chunkSize, chunks: write.chunks)
            record = try Record.make(body: .largeWrite(lying), clock: (now + 6) << 16, signer: alice)
        }
        let report = try store.ingest([record], nowMillis: now)
        #expect(report.added == 1, "validly signed: stored")
        #expect(try store.value(at: .root) == before)
        #expect(try !store.hasPendingLargeWrites)
        #expect(try store.recordCount() == 2)
    }

    @Test("a record naming more content than the limit, or chunk hashes that do not add up, is refused")
    func recordBounds() throws {
        let hash = BLAKE2b.digest256([1])
        let tooLarge = LargeWrite(content: hash, size: LargeWrite.maxSize + 1, chunkSize: 1 << 20,
                                  chunks: Array(repeating: hash, count: 257))
        #expect(throws: RecordError.self) { try Record.make(body: .largeWrite(tooLarge), clock: 1 << 16, signer: alice) }
        let wrongCount = LargeWrite(content: hash, size: 8192, chunkSize: 4096, chunks: [hash])
        #expect(throws: RecordError.self) { try Record.make(body: .largeWrite(wrongCount), clock: 1 << 16, signer: alice) }
    }
}

extension JSONValue {
    /// The value at `path` below this one (null when absent).
    func child(_ path: Path) -> JSONValue {
        var value = self
        for segment in path.segments {
            guard case let .object(members) = value, let next = members[segment] else { return .null }
            value = next
        }
        return value
    }
}

/// A large write folded by its writer (from its pairs at hand) and by a peer (from its chunks,
/// read a chunk at a time, twice) gives the same tree.
@Suite("Large writes folded from chunks")
struct LargeWriteStreamFoldTests {
    let alice = testAuthors[0]
    let now: UInt64 = 1_700_000_000_000

    /// Random pairs into the open zone, one's own profile and messages, some of them over
    /// values already there, with a 300 KB string now and then.
    static func randomPairs(seed: UInt64, uid: String) -> [WritePair] {
        var random = SplitMix64(seed: seed)
        var byPath = [String: WritePair]()
        for i in 0..<(2_000 + Int(random.next() % 400)) {
            let path: Path
            switch random.next() % 4 {
            case 0: path = try! Path("/open/\(random.next() % 700)/f\(random.next() % 3)")
            case 1: path = try! Path(segments: ["users", uid, "f\(random.next() % 50)"])
            case 2: path = try! Path("/conversations/c\(random.next() % 3)/messages/m\(random.next() % 300)")
            default: path = try! Path("/deep/\(i)")
            }
            let value: JSONValue
            if path.storageKey.contains("messages") {
                value = ["senderId": .string(uid), "text": .string("t\(random.next() % 1000)"), "date": .number(Double(i))]
            } else if random.chance(0.003) {
                value = .string(String(repeating: "z", count: 300_000))
            } else {
                value = ["n": .number(Double(random.next() % 100)), "s": .string("v\(i)")]
            }
            byPath[path.storageKey] = WritePair(path: path, value: value)
        }
        // Disjoint paths: drop any pair below another (which sorts right after it).
        let sorted = byPath.values.sorted { Array($0.path.storageKey.utf8).lexicographicallyPrecedes(Array($1.path.storageKey.utf8)) }
        var pairs = [WritePair]()
        for pair in sorted where !(pairs.last?.path.isAncestorOrSelf(of: pair.path) ?? false) { pairs.append(pair) }
        return pairs
    }

    @Test("random large writes folded from their pairs by the writer and from their chunks by a peer give the same tree", arguments: [11, 12, 13])
    func sameTree(seed: UInt64) throws {
        let a = try memoryStore(), b = try memoryStore()
        let uid = alice.publicKey.userID
        // Values there before, on both, for the large writes to replace or extend.
        var records = [Record]()
        records.append(try a.set(try Path("/open/1"), to: ["f0": "old", "keep": 1], signer: alice, nowMillis: now))
        records.append(try a.set(try Path("/conversations/c0/messages/m1"), to: ["senderId": .string(uid), "text": "old"], signer: alice, nowMillis: now))
        for round in 0..<2 {
            let pairs = Self.randomPairs(seed: seed * 10 + UInt64(round), uid: uid)
            let record = try a.write(pairs, signer: alice, nowMillis: now + UInt64(round))
            #expect(record.kind == .largeWrite)
            records.append(record)
        }
        // B takes the records first and the chunks after, so each fold reads them from its chunks.
        _ = try b.ingest(records, nowMillis: now)
        for record in records {
            guard case let .largeWrite(write) = record.body else { continue }
            let chunks = try write.chunks.map { (hash: $0, bytes: try #require(try a.chunk($0))[...]) }
            try b.chunkDB.transaction(.immediate) { _ = try b.chunkStore.append(chunks) }
        }
        #expect(try b.applyCompletedLargeWrites().count == 2)
        let tree = try a.value(at: .root)
        #expect(tree != .null)
        #expect(try b.value(at: .root) == tree)
        // And a rebuild of the tree from the records folds them again alike.
        try b.db.run("INSERT OR REPLACE INTO meta(key, value) VALUES ('tree_rebuild', 1)")
        try b.rebuildTreeIfRequested()
        #expect(try b.value(at: .root) == tree)
    }
}
