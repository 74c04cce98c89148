import Crypto
import Foundation
import SQLite
import Tree
import Wire

/// A year of chat on one node (`lanchat-bench scale`): generated data imported by `lanchat
/// import`, then a node started on it, queried, and synced to a fresh node, all real processes
/// whose memory is sampled from /proc. Each figure beside a ceiling measured in the same run:
/// the Ed25519 verify rate for import and cold sync, the record bytes for the store's size, a
/// raw SQLite range scan of the same rows for queries.
enum ScaleBenchmark {
    static func log(_ text: String) { FileHandle.standardError.write(Data("scale: \(text)\n".utf8)) }

    static func run(_ options: BenchOptions) throws -> BenchSection {
        let n = options.scaleRecords
        let cores = ProcessInfo.processInfo.activeProcessorCount
        let lanchat = try lanchatExecutable()
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("lanchat-scale-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        // LANCHAT_SCALE_KEEP=1 keeps the stream and both stores for a look afterwards.
        let keep = ProcessInfo.processInfo.environment["LANCHAT_SCALE_KEEP"] == "1"
        defer { if keep { log("kept \(dir)") } else { try? FileManager.default.removeItem(atPath: dir) } }

        log("generating and signing \(n) records")
        let data = ScaleData(records: n, seed: 2026)
        let stream = dir + "/year.lcx"
        var summary = ScaleData.Summary()
        let generateSeconds = try measure { summary = try data.write(to: stream, seed: 12) }
        log("\(summary.records) records, \(summary.bytes) bytes, in \(String(format: "%.0f", generateSeconds)) s")
        let sample = summary.sample
        // The median of three passes over the sample: this machine's verify rate swings by a
        // fifth from one second to the next (13,000 to 19,000/s seen around one sync), and a
        // single pass put that swing straight into the ratio. On `cores` above one, each core
        // makes a pass of its own at the same time: what the cores verify together, which can
        // fall short of that many times one core (shared caches and memory, the host's other
        // guests), so a gap to the cold sync's target shows as the cores' or the nodes' own.
        func verifyRate(cores n: Int = 1) -> Double {
            median((0..<3).map { _ in Bench.verifyRate(of: sample, cores: n) })
        }

        // Import into a fresh node.
        let a = dir + "/a"
        try runLanchat(lanchat, ["init", "--data", a, "--name", "Scale Reader"])
        let verifyBeforeImport = verifyRate()
        log("importing")
        let importer = try ProcessProbe(lanchat, ["import", "--data", a, stream], log: dir + "/import.log")
        let importSeconds = measure { importer.wait() }
        guard importer.process.terminationStatus == 0 else {
            throw BenchError("import failed: " + ((try? String(contentsOfFile: dir + "/import.log", encoding: .utf8)) ?? ""))
        }
        let verifyAfterImport = verifyRate()
        let importPeak = importer.peak
        let importRate = Double(summary.records) / importSeconds
        let importCeiling = (verifyBeforeImport + verifyAfterImport) / 2 * Double(cores)

        // The store's size, its WAL copied back first.
        let storePath = a + "/store.sqlite"
        let tables: [(String, Int)]
        do {
            let db = try Connection(path: storePath)
            try db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            tables = (try? db.all("SELECT name, sum(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC") { ($0.text(0), Int($0.int64(1))) }) ?? []
        }
        let storeBytes = fileSize(storePath) + fileSize(storePath + "-wal")

        // Start-up: from launch until the API answers, three times.
        let apiPort = try freeLoopbackPort(), listenPort = try freeLoopbackPort()
        func startNode(_ data: String, api: UInt16, listen: UInt16, peers: [UInt16] = [], log name: String) throws -> ProcessProbe {
            try ProcessProbe(lanchat, ["run", "--data", data, "--listen", "127.0.0.1:\(listen)", "--api", "127.0.0.1:\(api)",
                                        "--api-token", APIBenchmark.token, "--no-discovery"] + peers.flatMap { ["--peer", "127.0.0.1:\($0)"] },
                             log: dir + "/\(name).log")
        }
        var startups = [Double]()
        var node: ProcessProbe?
        for attempt in 0..<3 {
            let begin = DispatchTime.now().uptimeNanoseconds
            let started = try startNode(a, api: apiPort, listen: listenPort, log: "a")
            guard waitForAPI(port: apiPort, timeout: 120) else { started.stop(); throw BenchError("node did not answer on its API") }
            startups.append(Double(DispatchTime.now().uptimeNanoseconds - begin) / 1e9)
            log("start-up \(attempt + 1): \(String(format: "%.2f", startups.last!)) s")
            if attempt < 2 { started.stop() } else { node = started }
        }
        guard let node else { throw BenchError("no node") }
        defer { node.stop() }
        usleep(3_000_000)
        let idle = node.current ?? (0, 0)
        log("idle: \(mb(idle.anon)) anonymous, \(mb(idle.file)) file-backed")

        // Queries: the newest 50 messages of a conversation, as a chat shows them, through the
        // API; against the same rows read by a raw SQLite range scan of the store.
        node.resetPeak()
        let byConversation = summary.messagesByConversation.sorted { $0.value > $1.value }.map(\.key)
        let picks = (0..<options.scaleQueries).map { i in i % 2 == 0 ? byConversation[i / 2 % min(3, byConversation.count)] : byConversation[(i * 7919) % byConversation.count] }
        let client = try BenchClient(port: apiPort)
        var apiTimes = [Double]()
        for cid in picks {
            let request = APIBenchmark.request("GET", "/conversations/\(cid)/messages.json?orderBy=%22$key%22&limitToLast=50", body: nil)
            apiTimes.append(try measure { _ = try client.exchange(request) })
        }
        client.close()
        let queryPeak = node.peak
        let afterQueries = node.current ?? (0, 0)
        var rawTimes = [Double]()
        do {
            let db = try Connection(path: storePath)
            for cid in picks {
                let low = "\u{1}conversations\u{1}\(cid)\u{1}messages\u{1}", high = "\u{1}conversations\u{1}\(cid)\u{1}messages\u{2}"
                rawTimes.append(try measure {
                    var bytes = 0
                    // A message's value is in its row, or (written once) in its record.
                    try db.query("""
                        SELECT zone, value, CASE WHEN length(value) = 0 THEN (SELECT bytes FROM records WHERE seq = zones.first_seq) END
                        FROM zones WHERE zone > ? AND zone < ? ORDER BY zone DESC LIMIT 50
                        """, [.text(low), .text(high)]) { row in
                        bytes += row.text(0).utf8.count + row.blob(1).count + (row.isNull(2) ? 0 : row.blob(2).count)
                    }
                    precondition(bytes > 0, "no rows for \(cid)")
                })
            }
        }
        log("queries: API median \(ms(median(apiTimes))) ms, raw \(ms(median(rawTimes))) ms")

        // The web chat against the same node, in headless Chromium.
        log("web chat")
        let web = WebChatTiming.measure(lanchat: lanchat, data: a)

        // Cold syncs to a fresh node over loopback; the one of median ratio is reported.
        let expected = summary.records + 2  // and both nodes' own profiles
        var syncs = [ColdSync]()
        for attempt in 0..<options.scaleColdSyncs {
            let b = dir + "/b"
            try? FileManager.default.removeItem(atPath: b)
            try runLanchat(lanchat, ["init", "--data", b, "--name", "Scale Newcomer"])
            let verifyBefore = verifyRate(), togetherBefore = verifyRate(cores: cores)
            let bAPI = try freeLoopbackPort(), bListen = try freeLoopbackPort()
            log("cold sync \(attempt + 1)")
            let servingCPUBefore = node.cpuSeconds ?? 0
            let syncBegin = DispatchTime.now().uptimeNanoseconds
            let newcomer = try startNode(b, api: bAPI, listen: bListen, peers: [listenPort], log: "b")
            defer { newcomer.stop() }
            let watcher = SyncWatcher(api: bAPI)
            var synced = false
            let deadline = Date().addingTimeInterval(Double(n) / 500 + 120)
            while Date() < deadline {
                if let count = watcher.records(), count >= expected { synced = true; break }
                usleep(100_000)
            }
            watcher.close()
            let seconds = Double(DispatchTime.now().uptimeNanoseconds - syncBegin) / 1e9
            let newcomerCPU = newcomer.cpuSeconds ?? 0, servingCPU = (node.cpuSeconds ?? 0) - servingCPUBefore
            let verifyAfter = verifyRate(), togetherAfter = verifyRate(cores: cores)
            let peak = newcomer.peak
            guard synced else { throw BenchError("cold sync did not finish: \(recordCount(lanchat, b) ?? -1) of \(expected) records") }
            usleep(3_000_000)
            syncs.append(ColdSync(seconds: seconds, rate: Double(summary.records) / seconds, verifyBefore: verifyBefore, verifyAfter: verifyAfter,
                                  together: (togetherBefore + togetherAfter) / 2, cores: cores, newcomerCPU: newcomerCPU, servingCPU: servingCPU, peak: peak,
                                  idleAfter: newcomer.current ?? (0, 0)))
            log("cold sync \(attempt + 1): \(String(format: "%.1f", seconds)) s, ratio \(String(format: "%.2f", syncs.last!.ratio))")
        }
        let sync = syncs.sorted { $0.ratio < $1.ratio }[syncs.count / 2]
        let syncPeakAnon = syncs.map(\.peak.anon).max() ?? 0, syncPeakFile = syncs.map(\.peak.file).max() ?? 0

        func f(_ x: Double) -> String { String(format: "%.0f", x) }
        func r(_ x: Double) -> String { String(format: "%.2f", x) }
        func pct(_ xs: [Double], _ p: Int) -> Double { let s = xs.sorted(); return s[min(s.count - 1, s.count * p / 100)] }
        let sizes = summary.messagesByConversation.values.sorted(by: >)
        var lines = [
            "## A year of chat on one node: \(summary.records) records",
            "",
            "Run \(ISO8601DateFormatter().string(from: Date())), \(cores) cores. \(summary.profiles) users with names in a dozen scripts, "
                + "\(summary.conversations) conversations (the largest \(sizes.first ?? 0) messages, then \(sizes.dropFirst().prefix(2).map(String.init).joined(separator: ", ")); "
                + "the median \(sizes.isEmpty ? 0 : sizes[sizes.count / 2])), \(summary.messages) messages of which \(summary.photos) photos "
                + "(each with its manifest and file entry; the photos' bytes are not part of the run), \(summary.edits) edits and \(summary.deletes) deletes "
                + "arriving after newer messages. Records of \(summary.bytes / max(summary.records, 1)) bytes on average, \(mb(summary.bytes)) in all. "
                + "Memory is read from /proc/PID/status: anonymous (heap, SQLite's cache) apart from file-backed pages (the mapped store), which the kernel can drop.",
            "",
            "| measure | figure | ceiling or target | ratio |",
            "|---|---|---|---|",
            "| raw Ed25519 verify, one core, before and after the import (median of 3 passes each) | \(f(verifyBeforeImport)), \(f(verifyAfterImport)) /s | | |",
            "| **`lanchat import`** (a real process, file read in pieces) | **\(f(importRate)) records/s** (\(r(importSeconds)) s) | \(cores) cores x verify = \(f(importCeiling))/s | \(r(importRate / importCeiling)) |",
            "| import: peak memory | \(mb(importPeak.anon)) anonymous, \(mb(importPeak.file)) file-backed | independent of the file's size | |",
            "| **store size** (store.sqlite after a checkpoint) | **\(mb(storeBytes))** | \(mb(summary.bytes)) of records; target at most 2x | \(r(Double(storeBytes) / Double(max(summary.bytes, 1)))) |",
            "| **start-up** until the API answers (3 starts) | **\(startups.map { r($0) }.joined(separator: ", ")) s** | under 1 s | |",
            "| **node memory, idle** | **\(mb(idle.anon)) anonymous** (+ \(mb(idle.file)) file-backed) | at most 150 MB anonymous | |",
            "| **query**: newest 50 messages of a conversation over the API, \(apiTimes.count) queries (half on the 3 largest) | **median \(ms(median(apiTimes))) ms, p99 \(ms(pct(apiTimes, 99))) ms** | raw SQLite range scan of the same rows: median \(ms(median(rawTimes))) ms, p99 \(ms(pct(rawTimes, 99))) ms | \(r(median(apiTimes) / median(rawTimes))) |",
            "| node memory during the queries | peak \(mb(queryPeak.anon)) anonymous, \(mb(afterQueries.anon)) after | at most 250 MB; back down after | |",
            webRow(web),
            "| raw Ed25519 verify, one core, before and after the cold sync reported (median of 3 passes each) | \(f(sync.verifyBefore)), \(f(sync.verifyAfter)) /s | | |",
            "| raw Ed25519 verify, all \(cores) cores at once, around the same sync | \(f(sync.together))/s | \(cores) x one core = \(f(sync.ceiling))/s | \(r(sync.together / sync.ceiling)) |",
            "| **cold sync** of a new node over loopback (connect, reconcile, transfer, verify, store, materialize); \(syncs.count == 1 ? "one sync" : "the median of \(syncs.count) syncs by ratio, each to a fresh node (ratios \(syncs.map { r($0.ratio) }.joined(separator: ", ")))") | **\(f(sync.rate)) records/s** (\(r(sync.seconds)) s) | \(cores) cores x verify = \(f(sync.ceiling))/s; target at least 0.7 (against all cores at once: \(r(sync.rate / sync.together))) | \(r(sync.ratio)) |",
            cpuRow(newcomer: sync.newcomerCPU, serving: sync.servingCPU, records: summary.records, verifyRate: sync.ceiling / Double(cores),
                   cores: cores, targetRate: 0.7 * sync.ceiling),
            "| new node's memory during the cold syncs | peak \(mb(syncPeakAnon)) anonymous (+ \(mb(syncPeakFile)) file-backed); \(mb(sync.idleAfter.anon)) idle after | at most 250 MB anonymous | |",
        ]
        if !tables.isEmpty {
            lines += ["", "Store by table and index (dbstat): " + tables.prefix(8).map { "\($0.0) \(mb($0.1))" }.joined(separator: ", ") + "."]
        }
        lines += ["", "Generating and signing the records took \(f(generateSeconds)) s (not part of any figure)."]
        return BenchSection(name: "scale", lines: lines)
    }

    /// Where the cold sync's CPU went, per record: both nodes run on this machine's cores, so the
    /// sync reaches its target only if their CPU per record fits the cores' time per record at
    /// the target rate. Of it, one signature check per record is the part no node can skip.
    static func cpuRow(newcomer: Double, serving: Double, records: Int, verifyRate: Double, cores: Int, targetRate: Double) -> String {
        func us(_ seconds: Double) -> String { String(format: "%.1f", seconds / Double(max(records, 1)) * 1e6) }
        let check = 1 / verifyRate * Double(records)
        return "| cold sync: CPU per record, both nodes | \(us(newcomer)) µs on the new node + \(us(serving)) µs on the serving node; "
            + "of it \(us(check)) µs checking the signature, \(us(newcomer + serving - check)) µs all else (decoding, storing, reconciling, transport) "
            + "| \(cores) cores at the target rate leave \(String(format: "%.1f", Double(cores) / targetRate * 1e6)) µs per record | |"
    }

    static func mb(_ bytes: Int) -> String { String(format: "%.0f MB", Double(bytes) / 1_000_000) }
    static func ms(_ seconds: Double) -> String { String(format: "%.2f", seconds * 1000) }

    static func fileSize(_ path: String) -> Int {
        (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
    }

    /// Polls the API (every 5 ms) until a GET answers.
    static func waitForAPI(port: UInt16, timeout: Double) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        let request = APIBenchmark.request("GET", "/scale/probe.json", body: nil)
        while Date() < deadline {
            if let client = try? BenchClient(port: port) {
                defer { client.close() }
                if (try? client.exchange(request)) != nil { return true }
            }
            usleep(5_000)
        }
        return false
    }

    /// The table's row of the web chat's times (or why they are missing).
    static func webRow(_ web: Result<WebChatTiming, BenchError>) -> String {
        switch web {
        case let .success(timing):
            func s(_ xs: [Double]) -> String { xs.map { String(format: "%.2f", $0) }.joined(separator: ", ") }
            return "| **web chat** in headless Chromium, \(timing.list.count) loads with a fresh profile: from the page's navigation start until the conversation list shows "
                + "(\(timing.conversationsShown) conversations); then from a click on the newest until its last \(timing.messagesShown) messages show "
                + "| **list \(s(timing.list)) s; messages \(s(timing.messages)) s** "
                + "| the browser's own set-up before it navigates, not counted: \(s(timing.beforeNavigation)) s | |"
        case let .failure(error):
            return "| web chat: time to first messages shown | not measured: \(error.description) | | |"
        }
    }

    /// One cold sync's figures, its ceiling the verify rate measured around it.
    struct ColdSync {
        let seconds: Double, rate: Double, verifyBefore: Double, verifyAfter: Double
        /// The verify rate of all cores at once, around the sync (mean of before and after).
        let together: Double
        let cores: Int
        let newcomerCPU: Double, servingCPU: Double
        let peak: (anon: Int, file: Int), idleAfter: (anon: Int, file: Int)
        var ceiling: Double { (verifyBefore + verifyAfter) / 2 * Double(cores) }
        var ratio: Double { rate / ceiling }
    }

    /// Watches a node's record count through its API on one kept connection. Why not `lanchat
    /// status`: each look was a process of its own, some 10 ms of one core, and looks five times a
    /// second took about 2.5% of a two-core machine from the sync they watched.
    final class SyncWatcher {
        private let port: UInt16
        private var client: BenchClient?
        private let request = APIBenchmark.request("GET", "/.lanchat/status", body: nil)

        init(api port: UInt16) { self.port = port }

        /// The node's record count; nil while its API does not answer yet.
        func records() -> Int? {
            do {
                if client == nil { client = try BenchClient(port: port) }
                guard let client, case let .object(fields) = try JSONValue.parse(client.body(of: request)),
                      case let .number(count)? = fields["records"] else { return nil }
                return Int(count)
            } catch {
                close()
                return nil
            }
        }

        func close() {
            client?.close()
            client = nil
        }
    }

    /// The record count `lanchat status` reports for the node running on `data`.
    static func recordCount(_ lanchat: String, _ data: String) -> Int? {
        guard let output = try? runLanchat(lanchat, ["status", "--data", data]) else { return nil }
        for line in output.split(separator: "\n") where line.hasPrefix("records:") {
            return line.dropFirst("records:".count).split(separator: " ").first.flatMap { Int($0) }
        }
        return nil
    }
}
