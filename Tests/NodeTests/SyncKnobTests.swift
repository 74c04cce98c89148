import Crypto
import Dispatch
import Foundation
@testable import Node
import Store
import Sync
import Testing
import Transport
import Tree

/// The reconciliation and fetching limits of Protocol.md §9 with their knobs turned down: the
/// anti-entropy interval, and the quota of files fetched without being asked.
@Suite("Sync limits, knobs turned down", .serialized)
struct SyncKnobTests {
    @Test("a node starts a round every antiEntropyInterval on the session it dialled")
    func antiEntropyInterval() throws {
        let source = RoundCountingSource(store: try Store(path: ":memory:"))
        let peer = try ScriptedPeer(network: CorruptChunkTests.network, source: source)
        defer { peer.stop() }
        let dir = try CorruptChunkTests.tempDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let log = LogLines()
        let interval = 0.3
        let node = try Knobs.node(dir, peers: [peer.address], log: log) { $0.antiEntropyInterval = .milliseconds(Int(interval * 1000)) }
        try node.start()
        defer { node.stop() }
        // The first two calls are the rounds both ends start when the session opens; then one
        // round (one reconcile message: the sets are empty) per interval.
        #expect(CorruptChunkTests.eventually(20) { source.askedAt.count >= 9 }, "log: \(log.lines)")
        let ticks = Array(source.askedAt.dropFirst(2).prefix(7))
        let mean = ticks.last!.timeIntervalSince(ticks.first!) / Double(ticks.count - 1)
        #expect(mean > interval * 0.7 && mean < interval * 2, "a round every \(mean) s, the interval is \(interval) s")
        #expect(peer.sessionsClosed == 0)
    }

    @Test("a session moving records gets a round only every maxRoundDeferral; once quiet, one every interval again")
    func roundDeferral() throws {
        let peerKey = PrivateKey()
        let peerStore = UncheckedBox(try Store(path: ":memory:"))
        let source = RoundCountingSource(store: peerStore.value)
        let peer = try ScriptedPeer(network: CorruptChunkTests.network, identity: peerKey, source: source)
        defer { peer.stop() }
        let dir = try CorruptChunkTests.tempDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let log = LogLines()
        let deferral = 1.0
        let node = try Knobs.node(dir, peers: [peer.address], log: log) { config in
            config.antiEntropyInterval = .milliseconds(100)
            config.maxRoundDeferral = deferral
        }
        try node.start()
        defer { node.stop() }
        #expect(CorruptChunkTests.eventually(10) { source.askedAt.count >= 5 }, "log: \(log.lines)")

        // The peer pushes a new record every 20 ms for 3 s: the session moves records at every tick.
        let pushed = Counter()
        let pace = DispatchQueue(label: "pushes")
        let pushing = Date()
        let timer = RepeatingTimer(interval: .milliseconds(20), queue: pace) {
            guard pushed.value < 150 else { return }
            pushed.value += 1
            let n = pushed.value
            peer.push {
                [try! peerStore.value.set(try! Path("/moving/r\(n)"), to: .number(Double(n)), signer: peerKey,
                                          nowMillis: SessionKnobTests.now()).encoded]
            }
        }
        defer { timer.cancel() }
        #expect(CorruptChunkTests.eventually(20) { pace.sync { pushed.value } == 150 })
        let stopped = Date()
        #expect(try CorruptChunkTests.eventually(10) { try node.read { try $0.recordCount() } == 150 }, "log: \(log.lines)")
        // Quiet again: a round every interval.
        #expect(CorruptChunkTests.eventually(10) { source.askedAt.filter { $0 > stopped }.count >= 8 })

        // Rounds (bursts of reconcile messages) started while records moved, after the first tick.
        var rounds = 0
        var last = Date.distantPast
        for time in source.askedAt where time > pushing.addingTimeInterval(0.3) && time < stopped {
            if time.timeIntervalSince(last) > 0.05 { rounds += 1 }
            last = time
        }
        let moving = stopped.timeIntervalSince(pushing) - 0.3
        #expect(rounds >= 1, "no round at all in \(moving) s of moving records: the deferral has no end")
        #expect(Double(rounds) <= moving / deferral + 2, "\(rounds) rounds in \(moving) s while records moved")
    }

    @Test("photos are fetched unasked while their missing chunks fit eagerFetchBytes; a photo one byte over waits to be asked")
    func eagerFetchQuota() throws {
        let dirA = try CorruptChunkTests.tempDirectory(), dirB = try CorruptChunkTests.tempDirectory(), dirC = try CorruptChunkTests.tempDirectory()
        defer { for dir in [dirA, dirB, dirC] { try? FileManager.default.removeItem(atPath: dir) } }
        let logA = LogLines(), logB = LogLines(), logC = LogLines()
        let a = try Knobs.node(dirA, log: logA)
        try a.start()
        defer { a.stop() }
        // Two photos in messages: one of two chunks, one of one.
        let big = "images/big.jpg", small = "images/small.jpg"
        let bigBytes = CorruptChunkTests.imageBytes(chunks: 1), smallBytes = CorruptChunkTests.imageBytes(chunks: 0)
        let now = SessionKnobTests.now()
        try a.write { store, key in
            for (path, bytes) in [(big, bigBytes), (small, smallBytes)] {
                try store.putFile(path, bytes: bytes, signer: key, nowMillis: now)
                _ = try store.push(try Path("/conversations/c/messages"), value: .object([
                    "senderId": .string(key.publicKey.userID), "photoURL": .string("gs://lanchat/\(path)"),
                ]), signer: key, nowMillis: now)
            }
        }
        let bigCost = try #require(a.read { try $0.fileInfo(big) }).manifest.chunks.count * Store.chunkSize
        #expect(bigCost == 2 * Store.chunkSize)

        // B's quota is exactly the big photo's missing chunks; C's is one byte less.
        func receiver(_ dir: String, _ log: LogLines, quota: Int) throws -> Node {
            try Knobs.node(dir, peers: [a.listenAddress], log: log) { config in
                config.eagerFetchBytes = quota
                config.antiEntropyInterval = .milliseconds(100)  // referenced files are looked for on this tick
            }
        }
        let b = try receiver(dirB, logB, quota: bigCost), c = try receiver(dirC, logC, quota: bigCost - 1)
        try b.start()
        defer { b.stop() }
        try c.start()
        defer { c.stop() }
        func complete(_ node: Node, _ path: String) throws -> Bool { try node.read { try $0.fileInfo(path)?.isComplete } == true }
        #expect(try CorruptChunkTests.eventually(20) { try complete(b, big) && complete(b, small) }, "log B: \(logB.lines)")
        #expect(try b.read { try $0.readFile(big) } == bigBytes)
        #expect(try CorruptChunkTests.eventually(20) { try complete(c, small) }, "log C: \(logC.lines)")
        // C knows the big photo but fetches none of it unasked: every tick finds it over the quota.
        let touched = try CorruptChunkTests.eventually(1) { try c.read { try $0.fileInfo(big)?.missing.count } != 2 }
        #expect(!touched, "C fetched part of a file over its quota")
        #expect(try c.read { try $0.fileInfo(big)?.missing.count } == 2)
        // Asked for, it comes.
        #expect(c.fetchFile(big)?.missing == 2)
        #expect(try CorruptChunkTests.eventually(20) { try complete(c, big) }, "log C: \(logC.lines)")
        #expect(try c.read { try $0.readFile(big) } == bigBytes)
    }

    @Test("a photo whose file arrives after the message that shows it is fetched unasked once it arrives")
    func eagerFetchOfLateFile() throws {
        let dirA = try CorruptChunkTests.tempDirectory(), dirB = try CorruptChunkTests.tempDirectory()
        defer { for dir in [dirA, dirB] { try? FileManager.default.removeItem(atPath: dir) } }
        let logA = LogLines(), logB = LogLines()
        let a = try Knobs.node(dirA, log: logA)
        try a.start()
        defer { a.stop() }
        let path = "images/late.jpg"
        let bytes = CorruptChunkTests.imageBytes(chunks: 1)
        let now = SessionKnobTests.now()
        let message = try a.write { store, key in
            try store.push(try Path("/conversations/c/messages"), value: .object([
                "senderId": .string(key.publicKey.userID), "photoURL": .string("gs://lanchat/\(path)"),
            ]), signer: key, nowMillis: now).key
        }
        let b = try Knobs.node(dirB, peers: [a.listenAddress], log: logB) { config in
            config.antiEntropyInterval = .milliseconds(100)
        }
        try b.start()
        defer { b.stop() }
        let messagePath = try Path("/conversations/c/messages/\(message)")
        #expect(try CorruptChunkTests.eventually(20) { try b.read { try $0.value(at: messagePath) } != .null }, "log B: \(logB.lines)")
        #expect(try b.read { try $0.fileInfo(path) } == nil)
        // The file now: its manifest and entry reach B after the reference, and B fetches it unasked.
        try a.write { store, key in try store.putFile(path, bytes: bytes, signer: key, nowMillis: now + 1) }
        #expect(try CorruptChunkTests.eventually(20) { try b.read { try $0.fileInfo(path)?.isComplete } == true }, "log B: \(logB.lines)")
        #expect(try b.read { try $0.readFile(path) } == bytes)
    }

    @Test("a node keeps 64 chunk requests in flight per peer, refills in batches of 32, and asks elsewhere after 10 s")
    func chunkWindowOfANode() throws {
        let dir = try CorruptChunkTests.tempDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let node = try Knobs.node(dir, log: LogLines())
        // The scheduler exactly as the node holds it.
        var fetcher = node.queue.sync { node.fetcher }
        // Peers as the node numbers its sessions.
        let slow = 1, other = 2
        let hashes = (0..<96).map { BLAKE2b.digest256([UInt8(truncatingIfNeeded: $0), UInt8(truncatingIfNeeded: $0 >> 8)]) }
        fetcher.want(hashes)
        fetcher.peerJoined(slow)
        let first = fetcher.schedule(now: 0).flatMap(\.hashes)
        #expect(first.count == 64, "in flight at once: \(first.count)")
        #expect(fetcher.schedule(now: 0).isEmpty, "a 65th request went out")
        // Half the window answered is not yet enough to ask again; one more is.
        for hash in first.prefix(31) { fetcher.received(hash, from: slow) }
        #expect(fetcher.schedule(now: 1).isEmpty)
        fetcher.received(first[31], from: slow)
        #expect(fetcher.schedule(now: 1).flatMap(\.hashes).count == 32)
        // Unanswered for 10 s: asked of another peer, not before (all 96 are in flight now).
        fetcher.peerJoined(other)
        let unanswered = Set(first.suffix(32))
        #expect(fetcher.schedule(now: 9.9).isEmpty, "re-asked before 10 s")
        let after = fetcher.schedule(now: 10.1)
        #expect(after.allSatisfy { $0.peer == other })
        #expect(Set(after.flatMap(\.hashes)) == unanswered, "not re-asked of the other peer after 10 s")
    }
}
