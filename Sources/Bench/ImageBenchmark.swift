import Crypto
import Dispatch
import Foundation
import Node
import Store
import Sync
import Transport
import Wire

/// Images: a 20 MiB file fetched over loopback from one node by another, against the raw
/// ChaCha20-Poly1305 throughput measured in the same run (every byte is sealed once by the
/// sender and opened once by the receiver); and the same file fetched by three nodes at once
/// from the sender and from each other, against one receiver alone.
enum ImageBenchmark {
    static let imageBytes = 20 << 20
    static let path = "images/bench.jpg"

    /// Single-receiver fetches measured; the median counts.
    static let singleRuns = 5

    static func run(_ options: BenchOptions) throws -> BenchSection {
        let image = makeImage()
        // The AEAD rate is measured before each fetch and after the last, and each fetch is set
        // against the mean of the two around it: this host's speed drifts within a run, and a
        // fetch lasts a tenth of a second.
        var aeads = [aeadThroughput()]
        var singles = [Double]()
        for _ in 0..<singleRuns {
            singles.append(try transfer(image, receivers: 1))
            aeads.append(aeadThroughput())
        }
        log("raw AEAD: \(aeads.map { String(format: "%.0f", $0) }.joined(separator: ", ")) MB/s")
        let three = try transfer(image, receivers: 3)
        let mb = Double(image.count) / 1e6
        let rates = singles.map { mb / $0 }
        let ceilings = singles.indices.map { (aeads[$0] + aeads[$0 + 1]) / 2 }
        let ratios = singles.indices.map { rates[$0] / ceilings[$0] }
        let single = median(singles)
        func f0(_ x: Double) -> String { String(format: "%.0f", x) }
        func f2(_ x: Double) -> String { String(format: "%.2f", x) }
        return BenchSection(name: "images", lines: [
            "## Images",
            "",
            "### A \(image.count >> 20) MiB image from one node to another over loopback",
            "",
            "| measure | MB/s, each of \(singleRuns) fetches |",
            "|---|---|",
            "| raw ChaCha20-Poly1305 seal, 64 KiB messages, one core: before each fetch and after the last | \(aeads.map(f0).joined(separator: ", ")) |",
            "| ceiling of each fetch: the mean of the AEAD rates just before and just after it | \(ceilings.map(f0).joined(separator: ", ")) |",
            "| **fetch: request, read, seal, send, open, hash-check, store** | **\(rates.map(f0).joined(separator: ", "))** |",
            "| fetch / its ceiling | \(ratios.map(f2).joined(separator: ", ")) |",
            "",
            "**Fetch / raw AEAD = \(f2(median(ratios)))** (median of the \(singleRuns) fetches; target at least 0.30). Against the best AEAD measurement of the run (\(f0(aeads.max()!)) MB/s) the median fetch (\(f0(mb / single)) MB/s, \(f2(single)) s) is \(f2(mb / single / aeads.max()!)).",
            "",
            "### The same image fetched by 3 nodes at once, from the sender and from each other",
            "",
            "| receivers | time until every receiver holds the image | MB/s delivered in all |",
            "|---|---|---|",
            "| 1 | \(String(format: "%.2f", single)) s | \(String(format: "%.0f", mb / single)) |",
            "| 3 | \(String(format: "%.2f", three)) s | \(String(format: "%.0f", 3 * mb / three)) |",
            "",
            "3 receivers / 1 receiver = \(String(format: "%.2f", three / single))x the time for 3x the bytes delivered.",
        ])
    }

    static func log(_ text: String) { FileHandle.standardError.write(Data("images: \(text)\n".utf8)) }

    /// MB/s of `ChaChaPoly.seal` over 64 KiB messages on one core.
    static func aeadThroughput() -> Double {
        let key = secureRandomBytes(ChaChaPoly.keyByteCount)
        let message = secureRandomBytes(64 << 10)
        var sink: UInt8 = 0
        var best = 0.0
        for _ in 0..<3 {
            let count = 640  // 40 MiB
            let seconds = measure {
                for nonce in 0..<UInt64(count) { sink ^= ChaChaPoly.seal(key: key, nonce: nonce, ad: [], plaintext: message)[0] }
            }
            best = max(best, Double(count * message.count) / seconds / 1e6)
        }
        if sink == 42 { log("") }  // keeps the loop from being optimised away
        return best
    }

    /// A JPEG header and random bytes: incompressible, like a large photo.
    static func makeImage() -> [UInt8] {
        [0xFF, 0xD8, 0xFF, 0xE0] + secureRandomBytes(imageBytes - 4)
    }

    /// Signals when a node logs that it fetched the whole benchmark file.
    final class Completions: @unchecked Sendable {
        let semaphore = DispatchSemaphore(value: 0)
        func log(_ line: String) {
            if line.hasPrefix("fetched "), line.contains(" chunks of \(ImageBenchmark.path) ") { semaphore.signal() }
        }
    }

    static func node(_ dir: String, peers: [SocketAddress], completions: Completions?) throws -> Node {
        var config = NodeConfig(listen: try SocketAddress(host: "127.0.0.1", port: 0))
        config.discovery = false
        config.manualPeers = peers
        config.eagerFetchBytes = 0  // fetched only when asked, so the clock starts at the ask
        if let completions { config.log = { completions.log($0) } }
        return try Node(store: try Store(path: dir + "/store.sqlite"), identity: PrivateKey(), network: .named("bench-images"), config: config)
    }

    /// Seconds from asking `receivers` nodes (all connected to the sender and to each other) to
    /// fetch the image until every one holds all of it.
    static func transfer(_ image: [UInt8], receivers count: Int) throws -> Double {
        var dirs = [String]()
        defer { for dir in dirs { try? FileManager.default.removeItem(atPath: dir) } }
        func newDirectory() throws -> String {
            let dir = try MeshBenchmark.tempDirectory()
            dirs.append(dir)
            return dir
        }
        let sender = try node(try newDirectory(), peers: [], completions: nil)
        try sender.start()
        defer { sender.stop() }
        try sender.write { store, key in
            _ = try store.putFile(path, bytes: image, signer: key, nowMillis: UInt64(Date().timeIntervalSince1970 * 1000))
        }
        let completions = Completions()
        var nodes = [Node]()
        defer { for node in nodes { node.stop() } }
        for _ in 0..<count {
            let peers = [sender.listenAddress] + nodes.map(\.listenAddress)
            let node = try node(try newDirectory(), peers: peers, completions: completions)
            try node.start()
            nodes.append(node)
        }
        // Every receiver connected to all the others and holding the file's records.
        for node in nodes {
            guard waitUntil(30, { node.status().peers.filter(\.connected).count == count
                && (try? node.read { try $0.fileInfo(path) }) != nil }) else { fatalError("receivers did not connect and sync") }
        }
        log("\(count) receiver(s) fetching \(image.count >> 20) MiB")
        let cpuBefore = cpuSeconds()
        let seconds = measure {
            for node in nodes { _ = node.fetchFile(path) }
            for _ in nodes {
                guard completions.semaphore.wait(timeout: .now() + 300) == .success else { fatalError("fetch did not finish") }
            }
        }
        log(String(format: "%.2f s, %.2f CPU seconds (all nodes, %d cores)", seconds, cpuSeconds() - cpuBefore, ProcessInfo.processInfo.activeProcessorCount))
        for node in nodes {
            guard try node.read({ try $0.readFile(path) }) == image else { fatalError("fetched bytes differ") }
        }
        return seconds
    }

    /// User and system CPU time of this process so far.
    static func cpuSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
    }

    /// Polls `condition` every 10 ms until it holds or `timeout` seconds pass.
    static func waitUntil(_ timeout: Double, _ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if condition() { return true }
            usleep(10_000)
        }
        return condition()
    }
}
