import Crypto
import Foundation
import CMemory
import Testing
import Tree
@testable import Wire
@testable import Store
import TestSupport

/// A large write of one pair in the open zone, an object of many leaves, is checked and folded
/// by a store on disk with anonymous memory bounded whatever the pair's size (Protocol.md
/// §3.7): the pair is read as a stream and its leaves go to the tree as they come. Each figure
/// is measured in a process of its own, where nothing else allocates meanwhile.
@Suite("Large write memory")
struct LargeWriteMemoryTests {
    let alice = testAuthors[0]
    let now: UInt64 = 1_700_000_000_000

    /// The anonymous resident memory of this process, in bytes, after malloc gave back what it
    /// holds free (so that memory freed before a measure does not hide growth during it).
    static func settledAnonymousMemory() -> Int {
        _ = lanchat_release_free_memory()
        return anonymousMemory()
    }

    /// The anonymous resident memory of this process, in bytes.
    static func anonymousMemory() -> Int { ProcessMemory.status("RssAnon") }


    static func head(_ major: UInt8, _ argument: UInt64, into out: inout [UInt8]) {
        let m = major << 5
        switch argument {
        case 0..<24: out.append(m | UInt8(argument))
        case 24...0xFF: out += [m | 24, UInt8(argument)]
        case 0x100...0xFFFF: out += [m | 25, UInt8(argument >> 8), UInt8(argument & 0xFF)]
        default: out += [m | 26] + (0..<4).reversed().map { UInt8((argument >> (8 * UInt64($0))) & 0xFF) }
        }
    }

    static func key(_ i: Int) -> String { "k" + String(repeating: "0", count: 7 - String(i).count) + String(i) }
    static func text(_ i: Int) -> String { "value number \(i) of the big object, padded" }

    /// The content of one pair at `/big`: an object of `leaves` members `k0000000`... each a
    /// 40-odd byte string, handed to `body` in pieces of `chunkSize` bytes without ever being
    /// whole in memory.
    static func content(leaves: Int, chunkSize: Int, _ body: ([UInt8]) throws -> Void) rethrows {
        var out = [UInt8]()
        out.reserveCapacity(chunkSize + 256)
        head(4, 1, into: &out)
        head(4, 2, into: &out)
        head(3, 4, into: &out)
        out += Array("/big".utf8)
        head(5, UInt64(leaves), into: &out)
        for i in 0..<leaves {
            let k = Array(key(i).utf8), v = Array(text(i).utf8)
            head(3, UInt64(k.count), into: &out)
            out += k
            head(3, UInt64(v.count), into: &out)
            out += v
            while out.count >= chunkSize {
                try body(Array(out[..<chunkSize]))
                out.removeFirst(chunkSize)
            }
        }
        if !out.isEmpty { try body(out) }
    }

    /// Puts the content's chunks in `store`'s chunk store and returns the signed record naming it.
    func storeContent(leaves: Int, in store: Store) throws -> (Record, Int) {
        let chunkSize = Store.chunkSize
        var hasher = BLAKE2b.Hasher(length: 32)
        var hashes = [Digest32]()
        var size = 0
        var batch = [(hash: Digest32, bytes: ArraySlice<UInt8>)]()
        func flush() throws {
            let pending = batch
            try store.chunkDB.transaction(.immediate) { _ = try store.chunkStore.append(pending) }
            batch.removeAll()
        }
        try Self.content(leaves: leaves, chunkSize: chunkSize) { chunk in
            hasher.update(chunk)
            let hash = BLAKE2b.digest256(chunk)
            hashes.append(hash)
            size += chunk.count
            batch.append((hash, chunk[...]))
            if batch.count == 256 { try flush() }
        }
        try flush()
        let digest = try Digest32(bytes: hasher.finalize())
        let write = LargeWrite(content: digest, size: UInt64(size), chunkSize: UInt64(chunkSize), chunks: hashes)
        return (try Record.make(body: .largeWrite(write), clock: now << 16, signer: alice), size)
    }

    func temporaryStore() throws -> (Store, URL) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("lanchat-largewrite-memory-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return (try Store(path: directory.appendingPathComponent("store.db").path), directory)
    }

    /// Checks and folds a content of one pair of `leaves` leaves in a store on disk; returns the
    /// growth of anonymous memory during the ingest and the content's size.
    func foldOnePair(leaves: Int) throws -> (growth: Int, size: Int) {
        let (store, directory) = try temporaryStore()
        defer { try? FileManager.default.removeItem(at: directory) }
        let (record, size) = try storeContent(leaves: leaves, in: store)
        let before = Self.settledAnonymousMemory()
        let (report, peak) = try ProcessMemory.peak { try store.ingest([record], nowMillis: now) }
        #expect(report.added == 1)
        #expect(try !store.hasPendingLargeWrites)
        // Every leaf is in the tree, with its value.
        let (low, high) = StoreKey.descendants(StoreKey.of(try Path("/big")))
        #expect(try store.db.scalarInt("SELECT count(*) FROM leaves WHERE path >= ? AND path < ?", [.text(low), .text(high)]) == Int64(leaves))
        for i in [0, 1, leaves / 2, leaves - 1] {
            #expect(try store.value(at: try Path("/big/\(Self.key(i))")) == .string(Self.text(i)))
        }
        return (peak - before, size)
    }

    /// The same pair decoded whole, as a pair was before it was read as a stream: the growth of
    /// anonymous memory while it is decoded and held.
    func decodeWhole(leaves: Int) throws -> Int {
        var content = [UInt8]()
        Self.content(leaves: leaves, chunkSize: 1 << 20) { content += $0 }
        let before = Self.settledAnonymousMemory()
        let (value, peak) = try ProcessMemory.peak { () throws -> JSONValue in
            let prefix = try CBORDecoder.decodePrefix(content.dropFirst(1), limits: LargeWrite.pairLimits)
            guard case let .array(pair) = prefix.item else { return .null }
            return try TreeValueCodec.decode(pair[1], at: try Path("/big"))
        }
        guard case let .object(members) = value, members.count == leaves else { Issue.record("not the pair's object"); return 0 }
        return peak - before
    }

    static let childVariable = "LANCHAT_LARGE_WRITE_MEMORY_CHILD"

    /// Runs `measureInChild` alone in a process of its own (this test bundle again), since the
    /// memory of this one is shared with the tests running beside it; returns what it measured.
    func measureInChild(_ mode: String, leaves: Int) throws -> (growth: Int, size: Int) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
        process.arguments = ["--testing-library", "swift-testing", "--filter", "measureInChild"]
        var environment = ProcessInfo.processInfo.environment
        environment[Self.childVariable] = "\(mode) \(leaves)"
        process.environment = environment
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let text = String(decoding: data, as: UTF8.self)
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("measured ") }) else {
            Issue.record("the measuring process said nothing: \(text.suffix(2000))")
            return (Int.max, 0)
        }
        let fields = line.split(separator: " ").compactMap { Int($0) }
        #expect(process.terminationStatus == 0, "\(text.suffix(2000))")
        return (fields[0], fields[1])
    }

    @Test("(run by the tests below in a process of their own)", .enabled(if: ProcessInfo.processInfo.environment[childVariable] != nil))
    func measureInChild() throws {
        let request = (ProcessInfo.processInfo.environment[Self.childVariable] ?? "").split(separator: " ")
        guard request.count == 2, let leaves = Int(request[1]) else { Issue.record("no request"); return }
        if request[0] == "whole" {
            print("measured \(try decodeWhole(leaves: leaves)) 0")
        } else {
            let (growth, size) = try foldOnePair(leaves: leaves)
            print("measured \(growth) \(size)")
        }
    }

    @Test("a content of one open pair of 300,000 leaves is checked and folded with anonymous memory rising less than 40 MiB, which a whole decode of the pair exceeds")
    func onePairOfManyLeaves() throws {
        let leaves = 300_000
        let (growth, size) = try measureInChild("stream", leaves: leaves)
        print("one pair of \(leaves) leaves, \(size) bytes: anonymous memory rose \(growth >> 20) MiB while checked and folded")
        #expect(growth < 40 << 20)
        let whole = try measureInChild("whole", leaves: leaves).growth
        print("the same pair decoded whole: anonymous memory rose \(whole >> 20) MiB")
        #expect(whole > 40 << 20)
    }

    @Test("a content of one open pair of 2,000,000 leaves (over 100 MB) is checked and folded with anonymous memory rising less than 64 MiB (LANCHAT_BIG=1)",
          .enabled(if: ProcessInfo.processInfo.environment["LANCHAT_BIG"] == "1"))
    func onePairOverHundredMegabytes() throws {
        let leaves = 2_000_000
        let (growth, size) = try measureInChild("stream", leaves: leaves)
        print("one pair of \(leaves) leaves, \(size) bytes: anonymous memory rose \(growth >> 20) MiB while checked and folded")
        #expect(size >= 100_000_000)
        #expect(growth < 64 << 20)
    }
}
