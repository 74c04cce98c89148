import Crypto
import SQLite
import Testing
import Tree
import Wire
@testable import Store
import TestSupport

/// "é" as U+00E9 (NFC) and as "e" + U+0301 (NFD).
private let nfc = "caf\u{E9}"
private let nfd = "cafe\u{301}"

private func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

/// A write signed exactly as spelled: paths and values go into the record as given, so records
/// can carry any spelling, as a peer's or an older node's may.
func spelledWrite(_ pairs: [(String, JSONValue)], clock millis: UInt64, signer: PrivateKey) throws -> Record {
    try signedAsSpelled(kind: 1, body: .array(pairs.map { .array([.text($0.0), TreeValueCodec.encode($0.1)]) }),
                        clock: millis << 16, signer: signer)
}

/// A file entry signed exactly as spelled.
func spelledFile(_ path: String, manifest: Digest32?, clock millis: UInt64, signer: PrivateKey) throws -> Record {
    try signedAsSpelled(kind: 3, body: .array([.text(path), manifest.map { .bytes($0.bytes) } ?? .null]), clock: millis << 16, signer: signer)
}

func signedAsSpelled(kind: UInt64, body: CBOR, clock: UInt64, signer: PrivateKey) throws -> Record {
    let fields: [CBOR] = [.unsigned(Record.version), .unsigned(kind), .bytes(signer.publicKey.bytes), .unsigned(clock), body]
    let signature = try signer.sign(Record.signingDomain + CBOR.array(fields).encoded())
    return try Record.decode(CBOR.array(fields + [.bytes(signature.bytes)]).encoded())
}

/// Every key of a value, at any depth.
private func allKeys(_ value: JSONValue) -> [String] {
    guard case let .object(members) = value else { return [] }
    return members.flatMap { [$0.key] + allKeys($0.value) }
}

/// The keys of an object value, as bytes (so that spellings are told apart), sorted.
private func keyBytes(_ value: JSONValue) -> [[UInt8]] {
    guard case let .object(members) = value else { return [] }
    return members.keys.map(bytes).sorted { $0.lexicographicallyPrecedes($1) }
}

/// Canonically equivalent keys are one key (Protocol.md §5.1): every store operation, with
/// records in either spelling arriving in either order, shows one key, in NFC.
@Suite("Keys in either spelling")
struct CanonicalKeyStoreTests {
    let alice = testAuthors[0]
    let bob = testAuthors[1]

    /// Ingests the records one by one in the given order into a new store.
    func store(_ records: [Record]) throws -> Store {
        let store = try memoryStore()
        for record in records { _ = try store.ingest([record], nowMillis: farFuture) }
        return store
    }

    /// Every path held in the open zone's tables and the zones' tables is spelled in NFC.
    func expectStoredNFC(_ store: Store, sourceLocation: SourceLocation = #_sourceLocation) throws {
        for (table, column) in [("leaves", "path"), ("cuts", "path"), ("zones", "zone"), ("zone_records", "zone"), ("files", "path")] {
            let keys = try store.db.all("SELECT \(column) FROM \(table)", []) { $0.text(0) }
            for key in keys { #expect(CanonicalText.isNFC(key), "\(table) holds \(key.debugDescription)", sourceLocation: sourceLocation) }
        }
        #expect(allKeys(try store.value(at: .root)).allSatisfy(CanonicalText.isNFC), sourceLocation: sourceLocation)
    }

    @Test("the bug report: a later write in either spelling wins, on both stores, in both orders of arrival",
          arguments: [(nfc, nfd), (nfd, nfc)])
    func laterWriteWins(first: String, second: String) throws {
        let records = [try spelledWrite([("/k/\(first)", "first")], clock: 1_000, signer: alice),
                       try spelledWrite([("/k/\(second)", "second")], clock: 2_000, signer: bob)]
        let stores = [try store(records), try store(records.reversed())]
        for store in stores {
            let k = try store.value(at: try Path("/k"))
            #expect(k == .object([nfc: "second"]))
            #expect(keyBytes(k) == [bytes(nfc)])
            #expect(try store.value(at: try Path("/k/\(nfc)")) == "second")
            #expect(try store.value(at: try Path("/k/\(nfd)")) == "second")
            #expect(try store.childKeys(of: try Path("/k")).map(bytes) == [bytes(nfc)])
            #expect(keyBytes(shallow(k)) == [bytes(nfc)])
            #expect(try store.db.scalarInt("SELECT count(*) FROM leaves") == 1)
            try expectStoredNFC(store)
        }
        #expect(try stores[0].value(at: .root).serialized() == stores[1].value(at: .root).serialized())
    }

    @Test("local writes in either spelling are one key, and are signed in NFC")
    func localWrites() throws {
        let store = try memoryStore()
        let first = try store.set(try Path("/k/\(nfc)"), to: "first", signer: alice, nowMillis: 1_000)
        let second = try store.set(try Path("/k/\(nfd)"), to: "second", signer: alice, nowMillis: 2_000)
        #expect(try store.value(at: try Path("/k")) == .object([nfc: "second"]))
        for record in [first, second] {
            #expect(!String(decoding: record.encoded, as: UTF8.self).unicodeScalars.contains("\u{301}"))
        }
        try store.update(try Path("/k"), with: .object(["\(nfd)/x": 1, "b": 2]), signer: alice, nowMillis: 3_000)
        #expect(try store.value(at: try Path("/k")) == .object([nfc: ["x": 1], "b": 2]))
        try store.set(try Path("/k"), to: .object([nfd: .object(["e\u{301}": 1])]), signer: alice, nowMillis: 4_000)
        #expect(keyBytes(try store.value(at: try Path("/k"))) == [bytes(nfc)])
        #expect(keyBytes(try store.value(at: try Path("/k/\(nfd)"))) == [bytes("\u{E9}")])
        try expectStoredNFC(store)
    }

    @Test("a delete in either spelling deletes the key", arguments: [(nfc, nfd), (nfd, nfc)])
    func deleteEitherSpelling(written: String, deleted: String) throws {
        let records = [try spelledWrite([("/k/\(written)", "v"), ("/k/other", 1)], clock: 1_000, signer: alice),
                       try spelledWrite([("/k/\(deleted)", .null)], clock: 2_000, signer: bob)]
        for store in [try store(records), try store(records.reversed())] {
            #expect(try store.value(at: try Path("/k")) == .object(["other": 1]))
            #expect(try store.childKeys(of: try Path("/k")) == ["other"])
        }
        // And through the store's own delete, given the other spelling.
        let local = try memoryStore()
        try local.set(try Path("/k/\(written)"), to: "v", signer: alice, nowMillis: 1_000)
        try local.delete(try Path("/k/\(deleted)"), signer: alice, nowMillis: 2_000)
        #expect(try local.value(at: try Path("/k")) == .null)
    }

    @Test("object members in either spelling merge with paths in the other", arguments: [false, true])
    func objectMembers(reversed: Bool) throws {
        // /k is set to an object whose keys are spelled NFD, then one member is overwritten by NFC path.
        let whole = try spelledWrite([("/k", .object([nfd: .object(["e\u{301}": 1, "x": 2])]))], clock: 1_000, signer: alice)
        let member = try spelledWrite([("/k/\(nfc)/\u{E9}", 3)], clock: 2_000, signer: bob)
        let records = reversed ? [member, whole] : [whole, member]
        let store = try store(records)
        let k = try store.value(at: try Path("/k"))
        #expect(k == .object([nfc: ["\u{E9}": 3, "x": 2]]))
        #expect(keyBytes(try store.value(at: try Path("/k/\(nfd)"))) == [bytes("x"), bytes("\u{E9}")])
        try expectStoredNFC(store)
    }

    @Test("protected zones: a profile and a message keep one key per spelling", arguments: [false, true])
    func zones(reversed: Bool) throws {
        let uid = alice.publicKey.userID
        let message = "/conversations/c/messages/m"
        let records = [
            try spelledWrite([("/users/\(uid)", .object(["first_name": "Alice", nfd: 1]))], clock: 1_000, signer: alice),
            try spelledWrite([("/users/\(uid)/\(nfc)", 2)], clock: 2_000, signer: alice),
            try spelledWrite([(message, .object(["senderId": .string(uid), nfd: .object(["e\u{301}": "a"])]))], clock: 1_000, signer: alice),
            try spelledWrite([("\(message)/\(nfc)/\u{E9}", "b")], clock: 2_000, signer: alice),
            try spelledWrite([("\(message)/\(nfd)/x", "c")], clock: 3_000, signer: alice),
        ]
        let store = try store(reversed ? records.reversed() : records)
        #expect(try store.value(at: try Path("/users/\(uid)")) == .object(["first_name": "Alice", nfc: 2]))
        #expect(keyBytes(try store.value(at: try Path("/users/\(uid)"))) == [bytes(nfc), bytes("first_name")])
        let expected: JSONValue = .object(["senderId": .string(uid), nfc: ["\u{E9}": "b", "x": "c"]])
        #expect(try store.value(at: try Path(message)) == expected)
        #expect(keyBytes(try store.value(at: try Path("\(message)/\(nfd)"))) == [bytes("x"), bytes("\u{E9}")])
        // Folding the zone again from its stored pairs gives the same.
        try store.zones.refold(.message(conversation: "c", message: "m"))
        #expect(try store.value(at: try Path(message)) == expected)
        try expectStoredNFC(store)
    }

    @Test("random writes in random spellings: every order of arrival gives the model's tree, in NFC", arguments: 0..<40)
    func randomSpellings(seed: UInt64) throws {
        var rng = SplitMix64(seed: seed)
        func pick<T>(_ items: [T]) -> T { items[Int(rng.next() % UInt64(items.count))] }
        let spellings = [["\u{E9}", "e\u{301}"], ["\u{1EC5}", "e\u{302}\u{303}", "\u{EA}\u{303}"], ["\u{BC15}", "\u{1107}\u{1161}\u{11A8}"], ["a"]]
        func key() -> String { pick(pick(spellings)) }
        func value(_ depth: Int) -> JSONValue {
            switch rng.next() % (depth > 1 ? 3 : 5) {
            case 0: return .null
            case 1: return .number(Double(rng.next() % 5))
            case 2: return .string(pick(["x", "e\u{301}"]))
            default:
                var members = [String: JSONValue]()
                for _ in 0..<(1 + rng.next() % 3) {
                    let k = key()
                    let v = value(depth + 1)
                    if v != .null { members[k] = v }
                }
                return members.isEmpty ? .number(9) : .object(members)
            }
        }
        var records = [Record]()
        for index in 0..<16 {
            let root = pick(["/k", "/users/\(alice.publicKey.userID)"])
            let path = root + String((0..<Int(rng.next() % 3)).map { _ in "/" + key() }.joined())
            let clock = 1_000 + rng.next() % 6
            records.append(try spelledWrite([(path, value(0))], clock: clock, signer: testAuthors[index % 2]))
        }
        let expected = MergeModel.tree(of: records)
        var trees = [String]()
        for round in 0..<3 {
            let store = try store(records.shuffled(using: &rng))
            let actual = try store.value(at: .root)
            #expect(actual == expected, "seed \(seed) round \(round)")
            try expectStoredNFC(store)
            trees.append(actual.serialized())
        }
        #expect(Set(trees).count == 1)
    }

    @Test("a store holding both spellings from before is folded again into one key on open")
    func rebuildOldStore() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.path + "/store.sqlite"
        let first = try spelledWrite([("/k/\(nfc)", "first")], clock: 1_000, signer: alice)
        let second = try spelledWrite([("/k/\(nfd)", "second")], clock: 2_000, signer: bob)
        // A record whose paths meet only in NFC, which an older node stored.
        let fields: [CBOR] = [.unsigned(1), .unsigned(1), .bytes(bob.publicKey.bytes), .unsigned(3_000 << 16),
                              .array([.array([.text("/k/\(nfd)"), .text("clash")]), .array([.text("/k/\(nfc)"), .text("clash")])])]
        let signature = try bob.sign(Record.signingDomain + CBOR.array(fields).encoded())
        let clash = CBOR.array(fields + [.bytes(signature.bytes)]).encoded()
        #expect(throws: RecordError.self) { try Record.decode(clash) }
        do {
            // The tree as the byte-comparing fold left it: two keys, the later write under NFD.
            let old = try Store(path: path)
            try old.transaction {
                _ = try old.insert(first)
                _ = try old.insert(second)
                try old.db.run("INSERT INTO records(id, clock, kind, bytes) VALUES (?, ?, 1, ?)",
                               [.blob(BLAKE2b.digest256(clash).bytes), .integer(3_000 << 16), .blob(clash)])
                for (record, key, text) in [(first, nfc, "first"), (second, nfd, "second")] {
                    let storeKey = "\u{1}k\u{1}" + key
                    try old.db.run("INSERT INTO leaves(path, kind, value, ord) VALUES (?, 3, ?, ?)", [.text(storeKey), .text(text), .blob(record.order.key)])
                    try old.db.run("INSERT INTO cuts(path, ord, ord_set) VALUES (?, ?, ?)", [.text(storeKey), .blob(record.order.key), .blob(record.order.key)])
                }
                try old.db.run("INSERT OR REPLACE INTO meta(key, value) VALUES ('tree_rebuild', 1)")
            }
            #expect(try old.db.scalarInt("SELECT count(*) FROM leaves") == 2)
        }
        let reopened = try Store(path: path)
        #expect(try reopened.db.scalarInt("SELECT count(*) FROM meta WHERE key = 'tree_rebuild'") == 0)
        let k = try reopened.value(at: try Path("/k"))
        #expect(k == .object([nfc: "second"]))
        #expect(keyBytes(k) == [bytes(nfc)])
        #expect(try reopened.db.scalarInt("SELECT count(*) FROM leaves") == 1)
        #expect(try reopened.recordCount() == 3)
        try expectStoredNFC(reopened)
    }

    @Test("storage paths in either spelling name one file")
    func files() throws {
        let store = try memoryStore()
        let png = FileStoreTests.smallPNG
        let info = try store.putFile("images/\(nfc).png", bytes: png, signer: alice, nowMillis: 1_000)
        #expect(bytes(info.path) == bytes("images/\(nfc).png"))
        #expect(try store.fileInfo("images/\(nfd).png")?.manifestID == info.manifestID)
        #expect(try store.readFile("images/\(nfd).png") == png)
        let again = try store.putFile("images/\(nfd).png", bytes: FileStoreTests.gif, signer: bob, nowMillis: 2_000)
        #expect(bytes(again.path) == bytes("images/\(nfc).png"))
        #expect(try store.listFiles().map { bytes($0.path) } == [bytes("images/\(nfc).png")])
        #expect(try store.listFiles(prefix: "images/\(nfd)").count == 1)
        #expect(try store.readFile("images/\(nfc).png") == FileStoreTests.gif)
        try store.deleteFile("images/\(nfd).png", signer: alice, nowMillis: 3_000)
        #expect(try store.fileInfo("images/\(nfc).png") == nil)
        try expectStoredNFC(store)
    }

    @Test("file entries in either spelling, in either order, name one file; the later wins", arguments: [false, true])
    func fileRecords(reversed: Bool) throws {
        let source = try memoryStore()
        let one = try source.putFile("a/one.png", bytes: FileStoreTests.smallPNG, signer: alice, nowMillis: 1_000)
        let two = try source.putFile("a/two.gif", bytes: FileStoreTests.gif, signer: alice, nowMillis: 1_000)
        let manifests = try source.records(after: 0).compactMap { try? Record.decode($0.bytes) }.filter { $0.kind == .manifest }
        let entries = [try spelledFile("shared/\(nfd).png", manifest: one.manifestID, clock: 2_000, signer: alice),
                       try spelledFile("shared/\(nfc).png", manifest: two.manifestID, clock: 3_000, signer: bob)]
        let store = try memoryStore()
        _ = try store.ingest(manifests, nowMillis: farFuture)
        for record in reversed ? entries.reversed() : entries { _ = try store.ingest([record], nowMillis: farFuture) }
        #expect(try store.fileInfo("shared/\(nfd).png")?.manifestID == two.manifestID)
        #expect(try store.listFiles().map { bytes($0.path) } == [bytes("shared/\(nfc).png")])
        // A delete in the other spelling deletes it.
        _ = try store.ingest([try spelledFile("shared/\(nfd).png", manifest: nil, clock: 4_000, signer: alice)], nowMillis: farFuture)
        #expect(try store.fileInfo("shared/\(nfc).png") == nil)
    }

    @Test("the images/<uid>_... rule holds for names in either spelling")
    func imageOwnership() throws {
        let uid = alice.publicKey.userID
        let source = try memoryStore()
        let image = try source.putFile("x.png", bytes: FileStoreTests.smallPNG, signer: alice, nowMillis: 1_000)
        let manifests = try source.records(after: 0).compactMap { try? Record.decode($0.bytes) }.filter { $0.kind == .manifest }
        #expect(StorageRules.owner(of: "images/\(uid)_\(nfd).png") == uid)
        #expect(StorageRules.owner(of: "\(uid)/\u{301}x.png") == uid)  // a "/" followed by a combining mark still separates
        let store = try memoryStore()
        _ = try store.ingest(manifests, nowMillis: farFuture)
        _ = try store.ingest([try spelledFile("images/\(uid)_\(nfd).png", manifest: image.manifestID, clock: 2_000, signer: bob)], nowMillis: farFuture)
        #expect(try store.fileInfo("images/\(uid)_\(nfc).png") == nil)
        _ = try store.ingest([try spelledFile("images/\(uid)_\(nfd).png", manifest: image.manifestID, clock: 3_000, signer: alice)], nowMillis: farFuture)
        #expect(try store.fileInfo("images/\(uid)_\(nfc).png")?.manifestID == image.manifestID)
        #expect(throws: StoreError.self) {
            try store.putFile("images/\(uid)_\(nfc).png", bytes: FileStoreTests.smallPNG, signer: bob, nowMillis: 4_000)
        }
    }

    @Test("the users directory finds a name stored in either spelling with a query in either spelling")
    func directory() throws {
        let names = [("Nguye\u{302}\u{303}n", "Va\u{306}n An"), ("Tr\u{1EA7}n", "Th\u{1ECB} \u{110}\u{E0}o"),
                     ("\u{1107}\u{1161}\u{11A8}\u{110C}\u{116E}\u{11AB}", nil as String?)]
        let store = try memoryStore()
        for (index, (first, last)) in names.enumerated() {
            let key = directoryKey(700 + index)
            _ = try store.ingest([try spelledWrite([("/users/\(key.publicKey.userID)", profile(first, last))], clock: 1_000, signer: key)],
                                 nowMillis: farFuture)
        }
        func found(_ query: String) throws -> Int { try store.searchUsers(query, limit: 10).count }
        for query in ["Nguy\u{1EC5}n", "Nguye\u{302}\u{303}n", "nguyen", "V\u{103}n", "Tra\u{302}\u{300}n", "Tr\u{1EA7}n", "\u{110}a\u{300}o",
                      "\u{BC15}\u{C900}", "\u{1107}\u{1161}\u{11A8}", "\u{BC15}"] {
            #expect(try found(query) == 1, "\(query.debugDescription)")
        }
        #expect(try store.listUsers(limit: 10).count == 3)
        #expect(try store.childKeys(of: try Path("/users")).allSatisfy(CanonicalText.isNFC))
    }

    @Test("queries and shallow reads over keys written in both spellings show one key")
    func queries() throws {
        let records = [try spelledWrite([("/k/cafe", 1), ("/k/\(nfd)", 2)], clock: 1_000, signer: alice),
                       try spelledWrite([("/k/cafz", 4), ("/k/\(nfc)", 3)], clock: 2_000, signer: bob)]
        let store = try store(records)
        let k = try store.value(at: try Path("/k"))
        #expect(keyBytes(shallow(k)) == [bytes("cafe"), bytes("cafz"), bytes(nfc)])
        for bound in [nfc, nfd] {
            let json = JSONValue.string(bound).serialized()
            let query = try #require(try FirebaseQuery.parse([("orderBy", "\"$key\""), ("equalTo", json)]))
            #expect(query.apply(to: k) == .object([nfc: 3]))
            let last = try #require(try FirebaseQuery.parse([("orderBy", "\"$key\""), ("limitToLast", "1")]))
            #expect(keyBytes(last.apply(to: k)) == [bytes(nfc)])
        }
        let rows = try memoryStore()
        _ = try rows.ingest([try spelledWrite([("/r/a", .object([nfd: 2])), ("/r/b", .object([nfc: 1]))], clock: 1_000, signer: alice)],
                            nowMillis: farFuture)
        let byChild = try #require(try FirebaseQuery.parse([("orderBy", JSONValue.string(nfd).serialized())]))
        let ordered = byChild.apply(to: try rows.value(at: try Path("/r")))
        #expect(ordered == .object(["a": [nfc: 2], "b": [nfc: 1]]))
        let first = try #require(try FirebaseQuery.parse([("orderBy", JSONValue.string(nfc).serialized()), ("limitToFirst", "1")]))
        #expect(first.apply(to: try rows.value(at: try Path("/r"))) == .object(["b": [nfc: 1]]))
    }
}
