import Crypto
import Foundation
@testable import Node
import Store
import Testing
import Tree
import Transport

/// What `lanchat doctor` reads of clock skew: how far ahead of this node's clock a connected
/// peer stamps its own records, in the status of the node.
@Suite("Clock lead of peers", .serialized)
struct ClockLeadTests {
    @Test("a peer whose clock runs a minute ahead shows a lead of about a minute; relayed records do not count")
    func leadOfAPeerAhead() throws {
        try Knobs.withDirectories(2) { dirs in
            let (dirA, dirB) = (dirs[0], dirs[1])
            let logA = LogLines(), logB = LogLines()
            let a = try CorruptChunkTests.node(dirA, peers: [], log: logA)
            try a.start()
            defer { a.stop() }
            let b = try CorruptChunkTests.node(dirB, peers: [try SocketAddress(host: "127.0.0.1", port: a.listenAddress.port)], log: logB)
            try b.start()
            defer { b.stop() }
            let ahead: UInt64 = 60_000
            // B writes with its clock a minute ahead, and also holds a record of a third author
            // stamped three minutes ahead (within the drift bound), which B relays but did not write.
            _ = try b.write { store, key in
                try store.set(try Path("/skewed"), to: JSONValue.string("from the future"), signer: key, nowMillis: wallMillis() + ahead)
            }
            let third = PrivateKey()
            _ = try b.write { store, _ in
                try store.set(try Path("/relayed"), to: JSONValue.string("not B's"), signer: third, nowMillis: wallMillis() + 180_000)
            }
            #expect(try CorruptChunkTests.eventually(20) {
                try a.read { try $0.value(at: try Path("/relayed")) } != nil && a.status().peers.contains { $0.clockLeadMillis != nil }
            }, "log A: \(logA.lines)\nlog B: \(logB.lines)")
            let peer = try #require(a.status().peers.first { $0.userID == b.userID })
            let lead = try #require(peer.clockLeadMillis)
            #expect(lead > Int64(ahead) - 10_000 && lead <= Int64(ahead), "lead \(lead)")
            // Once B is gone, A keeps nothing of it: the lead of every identity that ever
            // connected would otherwise pile up.
            b.stop()
            #expect(try CorruptChunkTests.eventually(20) { a.queue.sync { a.clockLead.isEmpty } }, "log A: \(logA.lines)")
        }
    }
}
