import CMemory
import Crypto
import Dispatch
import Foundation
import SQLite
import Store
import TestSupport
import Tree
import Wire

/// Large writes folded by a peer (Protocol.md §3.7): the record is stored first, then every
/// chunk arrives and the write is folded from its chunks (read twice, a chunk at a time: hashed
/// and checked, then folded). For a 16 MB update of 100,000 children and a 10 MB string, with
/// the usual page cache and with one of 8 times the content (what folds used before), the CPU
/// time and the growth of resident memory during the fold; against a ceiling measured in the same
/// run: for the update, as many rows as it has leaves inserted in key order into a table like
/// the tree's, in one transaction, by plain SQLite; for the string, hashing its content once.
enum LargeWriteBenchmark {
    static func log(_ text: String) { FileHandle.standardError.write(Data("large writes: \(text)\n".utf8)) }

    struct Fold {
        let cpu: Double
        let peakGrowth: Int
        /// Growth of anonymous memory (the heap, SQLite's cache), sampled every 5 ms: the peak
        /// above counts file pages too, such as the chunk pack's map, which the fold reads.
        let anonGrowth: Int
    }


    static func run(_ options: BenchOptions) throws -> BenchSection {
        let children = options.quick ? 10_000 : 100_000
        let filler = String(repeating: "y", count: 123)
        var members = [String: JSONValue]()
        for i in 0..<children { members[String(format: "c%06d", i)] = .object(["n": .number(Double(i)), "text": .string(filler)]) }
        let update = JSONValue.object(members)
        members = [:]
        let text = JSONValue.string(String((0..<10_000_000).map { Character(Unicode.Scalar(UInt8(0x41 + $0 % 26))) }))

        var cases: [(String, Path, JSONValue, Bool)] = [
            ("update of \(children) children", try Path("/big/children"), update, true),
            ("10 MB string", try Path("/big/text"), text, false),
        ]
        if options.huge {
            // The most pairs a content holds, each about 1 KB: near the 256 MiB limit.
            let kilobyte = String(repeating: "h", count: 990)
            var huge = [String: JSONValue]()
            for i in 0..<LargeWrite.maxPairs { huge[String(format: "h%06d", i)] = .string(kilobyte) }
            cases.append(("update of \(LargeWrite.maxPairs) children of 1 KB", try Path("/huge"), .object(huge), true))
        }
        var lines = [String]()
        for (name, path, value, isUpdate) in cases {
            let (record, chunks, size) = try written(path, value, isUpdate: isUpdate)
            let rows = size > 64 << 20 ? LargeWrite.maxPairs : 2 * children
            let ceiling = isUpdate ? try insertCeiling(rows: rows) : hashCeiling(record, chunks)
            var folds = [(String, Fold)]()
            let caches: [(String, Int?)] = size > 64 << 20 ? [("usual page cache (16 MiB)", nil)]
                : [("usual page cache (16 MiB)", nil), ("page cache of 8 times the content", 8 * size / 1024)]
            for (label, kib) in caches {
                let fold = try foldOnPeer(record, chunks, path: path, expected: value, cacheKiB: kib)
                log("\(name), \(label): CPU \(String(format: "%.2f", fold.cpu)) s, peak growth \(fold.peakGrowth >> 20) MiB, anonymous \(fold.anonGrowth >> 20) MiB")
                folds.append((label, fold))
            }
            lines += ["### \(name) (content \(size) bytes, \(chunks.count) chunks), folded by a peer", "",
                      "| fold | CPU s | resident peak growth during the fold (VmHWM) | of which anonymous (RssAnon) | CPU / ceiling |", "|---|---|---|---|---|"]
            for (label, fold) in folds {
                lines.append("| \(label) | \(String(format: "%.2f", fold.cpu)) | \(fold.peakGrowth >> 20) MiB | \(fold.anonGrowth >> 20) MiB | \(String(format: "%.1f", fold.cpu / ceiling)) |")
            }
            let ceilingText = isUpdate ? "\(rows) rows inserted in key order by plain SQLite in one transaction"
                : "BLAKE2b-256 of the content once (the fold hashes it once and reads it twice)"
            lines += ["", "Ceiling: \(ceilingText), \(String(format: "%.3f", ceiling)) s CPU.", ""]
        }
        return BenchSection(name: "largewrites", lines: ["## Large writes folded by a peer", ""] + lines)
    }

    /// The record and chunks of a large write of `value` at `path`, written by a store of its own.
    static func written(_ path: Path, _ value: JSONValue, isUpdate: Bool) throws -> (Record, [[UInt8]], Int) {
        let directory = NSTemporaryDirectory() + "lanchat-bench-large-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try Store(path: directory + "/store.sqlite")
        let signer = PrivateKey()
        let now = UInt64(Date().timeIntervalSince1970 * 1000)
        let record = isUpdate ? try store.update(path, with: value, signer: signer, nowMillis: now)
            : try store.set(path, to: value, signer: signer, nowMillis: now)
        guard case let .largeWrite(write) = record.body else { throw BenchFailure("not a large write") }
        var chunks = [[UInt8]]()
        try store.forEachLargeWriteChunk { chunks.append($0) }
        return (record, chunks, Int(write.size))
    }

    /// A fresh store that stores `record`, then takes its chunks and folds it.
    static func foldOnPeer(_ record: Record, _ chunks: [[UInt8]], path: Path, expected: JSONValue, cacheKiB: Int?) throws -> Fold {
        let directory = NSTemporaryDirectory() + "lanchat-bench-large-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try Store(path: directory + "/store.sqlite")
        store.largeWriteCacheKiB = cacheKiB
        _ = try store.ingest([record], nowMillis: UInt64(Date().timeIntervalSince1970 * 1000))
        let slices = chunks.map { $0[...] }
        resetPeak()
        let rssBefore = ProcessMemory.status("VmRSS")
        let anonBefore = ProcessMemory.status("RssAnon")
        let cpuBefore = cpuSeconds()
        let (outcome, anonPeak) = try ProcessMemory.peak(everyMicroseconds: 5_000) { try store.importLargeWriteChunks(slices) }
        let cpu = cpuSeconds() - cpuBefore
        let peak = ProcessMemory.status("VmHWM")
        guard outcome.applied.count == 1, try store.value(at: path) == expected else { throw BenchFailure("the fold did not give the value") }
        return Fold(cpu: cpu, peakGrowth: max(0, peak - rssBefore), anonGrowth: max(0, anonPeak - anonBefore))
    }

    /// CPU seconds to insert `rows` rows (a path and a small value each) in key order into a
    /// WITHOUT ROWID table, in one transaction: what the fold cannot beat.
    static func insertCeiling(rows: Int) throws -> Double {
        let directory = NSTemporaryDirectory() + "lanchat-bench-large-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let db = try Connection(path: directory + "/ceiling.sqlite")
        try db.execute("PRAGMA journal_mode = WAL; CREATE TABLE leaves (path TEXT PRIMARY KEY, kind INTEGER NOT NULL, value ANY NOT NULL, ord BLOB NOT NULL) STRICT, WITHOUT ROWID")
        let ord = [UInt8](repeating: 1, count: 72)
        let start = cpuSeconds()
        try db.transaction {
            for i in 0..<rows {
                try db.run("INSERT INTO leaves(path, kind, value, ord) VALUES (?, 1, ?, ?)",
                           [.text("big\u{1}children\u{1}" + String(format: "c%06d\u{1}%@", i / 2, i % 2 == 0 ? "n" : "text")), .integer(Int64(i)), .blob(ord)])
            }
        }
        return cpuSeconds() - start
    }

    /// CPU seconds to hash the content of `record` (its chunks, each held once in `chunks`, in
    /// the record's order), by libsodium's streaming BLAKE2b.
    static func hashCeiling(_ record: Record, _ chunks: [[UInt8]]) -> Double {
        guard case let .largeWrite(write) = record.body else { return 0 }
        let byHash = Dictionary(chunks.map { (BLAKE2b.digest256($0), $0) }, uniquingKeysWith: { a, _ in a })
        let start = cpuSeconds()
        var hasher = BLAKE2b.Hasher(length: 32)
        for hash in write.chunks { hasher.update(byHash[hash] ?? []) }
        _ = hasher.finalize()
        return cpuSeconds() - start
    }

    static func cpuSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
    }

    /// Resets this process's resident peak (VmHWM) to its present size.
    /// First gives the heap's free memory back to the system, so that the growth measured
    /// from here is memory taken, not memory the heap had freed and kept.
    static func resetPeak() {
        _ = lanchat_release_free_memory()
        let descriptor = open("/proc/self/clear_refs", O_WRONLY)
        guard descriptor >= 0 else { return }
        _ = write(descriptor, "5", 1)
        close(descriptor)
    }
}
