import Crypto
import Foundation
@testable import Node
import Store
import Sync
import Testing
import Tree
import Wire

/// Two limits of Protocol.md §9 on a real node, against a member driving its session by hand:
/// the output queued for a peer (8 MiB, beyond which the peer is not read until it drains), and
/// the session frame (2 MiB: a frame of exactly that is taken, one byte more is a ban).
@Suite("Queued output and frames on a real node", .serialized)
struct QueuedOutputTests {
    static func now() -> UInt64 { UInt64(Date().timeIntervalSince1970 * 1000) }

    @Test("a peer that asks without reading is read while its answers queue below 8 MiB, not past it, and again once they drain")
    func readingStopsPastQueuedBytes() throws {
        try Knobs.withNode { node, log in
            // Four records of about 1 MB: one `want` of them queues about 4 MB.
            let ids = try (0..<4).map { i in
                try node.write { store, key in
                    try store.set(try Path("/big/r\(i)"), to: .string(String(repeating: "\(i)", count: 1_000_000)), signer: key, nowMillis: Self.now())
                }.id
            }
            let client = try RawSessionClient(to: node.listenAddress, network: CorruptChunkTests.network)
            defer { client.stop() }
            #expect(CorruptChunkTests.eventually(10) { client.isOpen && node.status().peers.contains(where: \.connected) }, "log: \(log.lines)")
            client.pauseReading()

            func slot() -> (paused: Bool, pending: Int, sent: Int)? {
                node.queue.sync { node.sessions.values.first.map { ($0.readPaused, $0.connection.pendingWriteBytes, $0.machine.recordsSent) } }
            }
            // Below the limit: answered, queued, and the peer is still read.
            client.send([.want(ids)])
            #expect(CorruptChunkTests.eventually(10) { slot()?.sent == 4 })
            #expect(slot()?.paused == false)
            #expect((slot()?.pending ?? 0) < Node.maxQueuedBytes)
            // Past it: one want at a time, each answered once read, until the queue passes 8 MiB
            // (the kernel holds some of the answers) and reading stops.
            var wants = 1
            while slot()?.paused == false && wants < 12 {
                client.send([.want(ids)])
                wants += 1
                let expected = 4 * wants
                #expect(CorruptChunkTests.eventually(10) { slot()?.sent == expected }, "want \(wants) not answered: \(String(describing: slot()))")
            }
            let paused = try #require(slot())
            #expect(paused.paused, "still read with \(paused.pending) bytes queued")
            #expect(paused.pending > Node.maxQueuedBytes)
            // Not read meanwhile: a further want waits.
            client.send([.want(ids)])
            wants += 1
            let answered = CorruptChunkTests.eventually(1) { slot()?.sent != paused.sent }
            #expect(!answered, "a paused peer was read")
            // The peer reads: everything it asked for arrives, and it is read again.
            client.resumeReading()
            func recordsReceived() -> Int {
                client.messages.reduce(0) { count, message in if case let .records(r) = message { count + r.count } else { count } }
            }
            let total = 4 * wants
            #expect(CorruptChunkTests.eventually(30) { recordsReceived() == total }, "received \(recordsReceived()) of \(total)")
            #expect(CorruptChunkTests.eventually(10) { slot()?.paused == false })
            #expect(!client.closed && !log.lines.contains { $0.contains("banned") }, "log: \(log.lines)")
        }
    }

    @Test("a frame of exactly 2 MiB holding two records at the record limit is stored; a frame one byte longer bans the sender")
    func oversizedFrameBansIdentity() throws {
        try Knobs.withNode { node, log in
            let member = PrivateKey()
            // Records of exact sizes: a string of 65,536 bytes or more grows its record byte for byte.
            let probe = try Store(path: ":memory:")
            func record(_ path: String, size: Int) throws -> Record {
                let base = try probe.set(try Path(path), to: .string(String(repeating: "m", count: 100_000)), signer: member, nowMillis: Self.now()).encoded.count
                return try probe.set(try Path(path), to: .string(String(repeating: "m", count: 100_000 + size - base)), signer: member, nowMillis: Self.now())
            }
            let max = SessionMessage.maxFrameBytes
            let first = try record("/frame/a", size: RecordLimits.maxRecordBytes)
            let second = try record("/frame/b", size: max - 3 - 5 - RecordLimits.maxRecordBytes - 5)
            let message = SessionMessage.records([first.encoded, second.encoded])
            #expect(first.encoded.count == RecordLimits.maxRecordBytes && message.encoded().count == max)

            let client = try RawSessionClient(to: node.listenAddress, network: CorruptChunkTests.network, identity: member)
            defer { client.stop() }
            #expect(CorruptChunkTests.eventually(10) { client.isOpen && node.status().peers.contains(where: \.connected) }, "log: \(log.lines)")
            client.send([message])
            #expect(try CorruptChunkTests.eventually(20) {
                try node.read { try $0.value(at: try Path("/frame/b")) } != nil && node.read { try $0.value(at: try Path("/frame/a")) } != nil
            }, "log: \(log.lines)")
            #expect(!client.closed)

            // One byte more, declared in the frame's length: refused on the prefix, and banned.
            client.send(stream: [0x00, 0x20, 0x00, 0x01])
            let ban = "banned user \(member.publicKey.userID) for 60 s: session frame of 2097153 bytes exceeds 2097152"
            #expect(CorruptChunkTests.eventually(10) { log.lines.contains(ban) }, "log: \(log.lines)")
            #expect(CorruptChunkTests.eventually(10) { client.closed })
            #expect(node.queue.sync { node.isBanned(member.publicKey) })
        }
    }

    @Test("a node that dials a peer holding nothing sends it every record a part at a time, never its whole set queued at once")
    func recordsFoundMissingGoOutInParts() throws {
        try Knobs.withDirectories(2) { dirs in
            let (dirA, dirB) = (dirs[0], dirs[1])
            let logA = LogLines(), logB = LogLines()
            let newcomer = try Knobs.node(dirB, log: logB)
            try newcomer.start()
            defer { newcomer.stop() }
            // 48 records of about 1 MB on the node that dials: its first round finds all of them
            // missing on the newcomer, 48 MB that were read and queued at once before.
            let holder = try Knobs.node(dirA, peers: [newcomer.listenAddress], log: logA)
            for i in 0..<48 {
                _ = try holder.write { store, key in
                    try store.set(try Path("/big/r\(i)"), to: .string(String(repeating: "\(i % 10)", count: 1_000_000)), signer: key, nowMillis: Self.now())
                }
            }
            try holder.start()
            defer { holder.stop() }
            var mostQueued = 0
            let synced = CorruptChunkTests.eventually(60) {
                mostQueued = max(mostQueued, holder.queue.sync { holder.gaugesOnQueue().maxQueuedBytes })
                return newcomer.queue.sync { newcomer.gaugesOnQueue().records } == 48
            }
            #expect(synced, "newcomer has \(newcomer.queue.sync { newcomer.gaugesOnQueue().records }) of 48; logs: \(logA.lines) \(logB.lines)")
            // A part (1 MiB and the record that reaches it) and the framing: far below the 48 MB.
            #expect(mostQueued <= 3 << 20, "\(mostQueued) bytes queued at once")
            #expect(mostQueued > 0, "the sync was never seen in flight")
        }
    }
}
