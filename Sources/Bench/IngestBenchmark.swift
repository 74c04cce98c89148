import Crypto
import Foundation
import SQLite
import Store
import Tree
import Wire

/// Ingest of signed records (decode, verify, store, materialize) against two ceilings measured
/// in the same run: the raw single-core Ed25519 verify rate and the raw SQLite insert rate.
///
/// The verify rate is measured just before and just after the ingest, and the ingest set against
/// their mean, as the mesh and image benchmarks do: this host's single-core speed drifts within
/// a run (verify measured from 9k to 16k per second within a minute), so a rate taken at another
/// moment than the ingest says little about it. Both rates are printed.
enum IngestBenchmark {
    static func run(_ options: BenchOptions) throws -> BenchSection {
        let n = options.records
        let authors = (0..<20).map { _ in PrivateKey() }
        FileHandle.standardError.write(Data("ingest: signing \(n) records...\n".utf8))
        var records = [[UInt8]]()
        records.reserveCapacity(n)
        var pushIDs = PushIDGenerator()
        var rng = SecureRandom()
        let base: UInt64 = 1_764_000_000_000
        for i in 0..<n {
            let author = authors[i % authors.count]
            let millis = base + UInt64(i)
            let conversation = "room\(i % 50)"
            let key = MessageKey.bind(pushIDs.next(nowMillis: millis, using: &rng), to: author.publicKey.userID)
            let path = try Path(segments: ["conversations", conversation, "messages", key])
            let message: JSONValue = .object([
                "senderId": .string(author.publicKey.userID), "senderName": .string("User \(i % authors.count)"),
                "date": .number(Double(millis)), "text": .string("message number \(i) in \(conversation)"),
            ])
            let record = try Record.make(body: .write([WritePair(path: path, value: message)]), clock: millis << 16, signer: author)
            records.append(record.encoded)
        }
        let sampleBytes = records.reduce(0) { $0 + $1.count } / max(records.count, 1)

        // Ceiling 1: raw Ed25519 verification on one core, same messages and signatures.
        let decoded = try records.prefix(min(n, 20_000)).map { try Record.decode($0, verify: false) }

        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("lanchat-bench-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }

        // Ceiling 2: raw SQLite inserts of the same bytes, same durability settings, same batches.
        let raw = try Connection(path: directory + "/raw.sqlite")
        try raw.configureForDurability()
        try raw.execute("CREATE TABLE t (seq INTEGER PRIMARY KEY, id BLOB NOT NULL UNIQUE, bytes BLOB NOT NULL) STRICT")
        let insertSeconds = try measure {
            for start in stride(from: 0, to: n, by: 1000) {
                try raw.transaction {
                    for bytes in records[start..<min(start + 1000, n)] {
                        try raw.run("INSERT INTO t(id, bytes) VALUES (?, ?)", [.blob(BLAKE2b.hash(bytes)), .blob(bytes)])
                    }
                }
            }
        }
        let insertRate = Double(n) / insertSeconds

        // Parts: decoding alone, and storing + materializing records already decoded and verified.
        let decodeSeconds = try measure {
            for bytes in records { _ = try Record.decode(bytes, verify: false) }
        }
        let predecoded = try records.map { try Record.decode($0, verify: false) }
        let partStore = try Store(path: directory + "/parts.sqlite")
        let storeSeconds = try measure {
            for start in stride(from: 0, to: n, by: 1000) {
                _ = try partStore.ingest(Array(predecoded[start..<min(start + 1000, n)]), nowMillis: base + UInt64(n) + 1000)
            }
        }

        // The real thing: decode + verify + store + materialize, in batches of 1000.
        let store = try Store(path: directory + "/store.sqlite")
        let now = base + UInt64(n) + 1000
        let verifyBefore = verifyRate(of: decoded)
        let ingestSeconds = try measure {
            for start in stride(from: 0, to: n, by: 1000) {
                let batch = try records[start..<min(start + 1000, n)].map { try Record.decode($0) }
                let report = try store.ingest(batch, nowMillis: now)
                precondition(report.added == batch.count)
            }
        }
        let verifyAfter = verifyRate(of: decoded)
        let ceiling = (verifyBefore + verifyAfter) / 2
        let ingestRate = Double(n) / ingestSeconds
        // Duplicates: the same records again.
        let duplicateSeconds = try measure {
            for start in stride(from: 0, to: n, by: 1000) {
                let batch = try records[start..<min(start + 1000, n)].map { try Record.decode($0, verify: false) }
                _ = try store.ingest(batch, nowMillis: now)
            }
        }

        let cores = ProcessInfo.processInfo.activeProcessorCount
        return BenchSection(name: "ingest", lines: [
            "## Ingest of \(n) signed message records",
            "",
            "Run \(ISO8601DateFormatter().string(from: Date())), \(cores) cores, records of \(sampleBytes) bytes on average, batches of 1000, WAL with synchronous=FULL.",
            "",
            "| measure | records/s |",
            "|---|---|",
            "| raw Ed25519 verify, one core, just before and just after the ingest | \(String(format: "%.0f", verifyBefore)), \(String(format: "%.0f", verifyAfter)) |",
            "| ceiling: their mean | \(String(format: "%.0f", ceiling)) |",
            "| raw SQLite insert of the same bytes (ceiling) | \(String(format: "%.0f", insertRate)) |",
            "| **ingest: decode + verify + store + materialize** | **\(String(format: "%.0f", ingestRate))** |",
            "| duplicates: decode + lookup | \(rate(n, duplicateSeconds)) |",
            "| part: decode only | \(rate(n, decodeSeconds)) |",
            "| part: store + materialize only | \(rate(n, storeSeconds)) |",
            "",
            "Ratios: ingest / verify = \(String(format: "%.2f", ingestRate / ceiling)); ingest / SQLite insert = \(String(format: "%.2f", ingestRate / insertRate)).",
        ])
    }
}
