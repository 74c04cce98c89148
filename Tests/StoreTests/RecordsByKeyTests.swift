import Crypto
import Foundation
import SQLite
import Testing
import Tree
import Wire
@testable import Store
import TestSupport

/// `records` indexed by (clock, id) (migration 17): a record is found by its clock and id in one
/// index probe and not by a wrong clock, a duplicate is still one lookup, key records are found
/// by id alone, files by manifest without reading the table, and a store indexed by id is moved
/// over with nothing lost.
@Suite("Records by clock and id")
struct RecordsByKeyTests {
    let alice = testAuthors[0]

    func records(_ count: Int, from start: Int = 0, kind: String = "n") throws -> [Record] {
        try (start..<(start + count)).map { n in
            try Record.make(body: .write([WritePair(path: try Path(segments: ["notes", "\(kind)\(n)"]), value: .number(Double(n)))]),
                            clock: UInt64(1_000 + n) << 16, signer: alice)
        }
    }

    /// The query plan's details of `sql`, one line per step.
    func plan(_ db: Connection, _ sql: String, _ values: [SQLValue]) throws -> [String] {
        try db.all("EXPLAIN QUERY PLAN " + sql, values) { $0.text(3) }
    }

    @Test("a record is found by (clock, id), not by another clock; a duplicate is ignored")
    func lookups() throws {
        let store = try Store(path: ":memory:")
        let batch = try records(50)
        #expect(try store.ingest(batch, nowMillis: farFuture).added == 50)
        let report = try store.ingest([batch[7], batch[7]], nowMillis: farFuture)
        #expect(report.added == 0 && report.duplicates == 2)
        #expect(try store.recordCount() == 50)
        for record in batch {
            #expect(try store.hasRecord(record.id, clock: record.clock))
            #expect(try !store.hasRecord(record.id, clock: record.clock + 1))
        }
        let keys = batch.reversed().map { (clock: $0.clock, id: $0.id) } + [(clock: batch[0].clock + 1, id: batch[0].id)]
        #expect(try store.records(withKeys: keys) == batch.reversed().map(\.encoded))
        // The keys come back in the index's order, (clock, id).
        let read = try store.recordKeys()
        #expect(read.map(\.clock) == batch.map(\.clock))
    }

    @Test("records asked for in any order, held or not, dense or sparse, come back held ones only and in the order asked",
          arguments: [1, 2, 3])
    func walkedReads(seed: UInt64) throws {
        let store = try Store(path: ":memory:")
        let held = try records(600)
        _ = try store.ingest(held, nowMillis: farFuture)
        var rng = SplitMix64(seed: seed)
        typealias Key = (clock: UInt64, id: Digest32)
        var keys = [Key]()
        var expected = [[UInt8]]()
        // Runs of neighbours, with gaps shorter and longer than a walk steps over.
        var position = 0
        while position < held.count {
            let run = Int(rng.next() % 40) + 1
            for record in held[position..<min(held.count, position + run)] {
                keys.append((record.clock, record.id))
                expected.append(record.encoded)
            }
            position += run + Int(rng.next() % UInt64(3 * Store.recordWalkSkip))
        }
        // Keys not held: a held id under a wrong clock, ids never stored, clocks before the
        // first record and after the last.
        let stranger = try records(5, from: 10_000)
        var missing: [Key] = stranger.map { ($0.clock, $0.id) } + [(held[3].clock + 1, held[3].id), (1, held[9].id), (.max >> 1, held[0].id), (.max, held[1].id)]
        for _ in 0..<20 { missing.append((held[Int(rng.next() % 600)].clock, try Digest32(bytes: (0..<32).map { _ in UInt8(truncatingIfNeeded: rng.next()) }))) }
        for key in missing { keys.insert(key, at: Int(rng.next() % UInt64(keys.count + 1))) }
        #expect(try store.records(withKeys: keys) == expected, "in the index's order, with keys not held among them")
        // The same keys shuffled: the held ones come back in the order asked.
        var shuffled = Array(keys.enumerated())
        for index in shuffled.indices.reversed() { shuffled.swapAt(index, Int(rng.next() % UInt64(index + 1))) }
        let byID = Dictionary(uniqueKeysWithValues: held.map { ($0.id, $0.encoded) })
        let shuffledExpected = shuffled.compactMap { _, key in byID[key.id].flatMap { bytes in held.contains { $0.id == key.id && $0.clock == key.clock } ? bytes : nil } }
        #expect(try store.records(withKeys: shuffled.map(\.element)) == shuffledExpected)
        #expect(try store.records(withKeys: []) == [])
        #expect(try store.records(withKeys: missing).isEmpty)
    }

    @Test("lookups by (clock, id) and of key records by id probe an index; none scans the table")
    func plans() throws {
        let store = try Store(path: ":memory:")
        _ = try store.ingest(try records(20), nowMillis: farFuture)
        let id = SQLValue.blob([UInt8](repeating: 1, count: 32))
        let byKey = try plan(store.db, "SELECT bytes FROM records WHERE clock = ? AND id = ?", [.integer(5), id])
        #expect(byKey.count == 1 && byKey[0].contains("records_by_key"), "\(byKey)")
        let insert = try plan(store.db, "SELECT 1 FROM records WHERE clock = ? AND id = ?", [.integer(5), id])
        #expect(insert.count == 1 && insert[0].contains("COVERING INDEX records_by_key"), "\(insert)")
        let keyRecord = try plan(store.db, "SELECT 1 FROM records WHERE id = ? AND kind = \(RecordKind.groupKey.rawValue)", [id])
        #expect(keyRecord.count == 1 && keyRecord[0].contains("key_records_by_id"), "\(keyRecord)")
        #expect(try !store.hasKeyRecord(try Digest32(bytes: [UInt8](repeating: 1, count: 32))))
        // Each manifest stored looks for the files naming it.
        for sql in ["SELECT path FROM files WHERE manifest = ?", "INSERT OR IGNORE INTO file_refs(path) SELECT path FROM files WHERE manifest = ?"] {
            let steps = try plan(store.db, sql, [id])
            #expect(steps.contains { $0.contains("files_by_manifest") } && !steps.contains { $0.hasPrefix("SCAN") }, "\(steps)")
        }
    }

    @Test("a store indexed by id (version 14) is moved to the index by (clock, id), nothing lost")
    func migration() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.path + "/store.sqlite"
        let batch = try records(300)
        do {
            let store = try Store(path: path)
            #expect(try store.ingest(batch, nowMillis: farFuture).added == 300)
            // Back to version 14's layout, as a store written before migration 17 has it.
            try store.db.execute("""
                DROP INDEX records_by_key;
                DROP INDEX key_records_by_id;
                CREATE UNIQUE INDEX records_by_id ON records(id, clock);
                PRAGMA user_version = 14;
                """)
        }
        let store = try Store(path: path)
        #expect(try store.db.userVersion == Schema.latestVersion)
        let indexes = Set(try store.db.all("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'records'") { $0.text(0) })
        #expect(indexes == ["records_by_key", "key_records_by_id"])
        #expect(try store.recordKeys().map(\.clock) == batch.map(\.clock))
        for record in batch { #expect(try store.hasRecord(record.id, clock: record.clock)) }
        #expect(try store.ingest(batch, nowMillis: farFuture).duplicates == 300)
        #expect(try store.ingest(try records(10, from: 300), nowMillis: farFuture).added == 10)
        #expect(try store.childKeys(of: try Path(segments: ["notes"])).count == 310)
        #expect(try store.integrityCheck() == ["ok"])
    }
}
