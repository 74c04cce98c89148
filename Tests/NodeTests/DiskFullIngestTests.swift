import Crypto
import DiskFaults
import Foundation
import Node
import Store
import Testing
import Transport
import Tree

/// A node whose disk fills up while a peer sends it records: it reports one clear error, goes on
/// serving what it holds, and stores the records once there is space again, without a restart
/// (reconciliation offers again whatever it could not store).
@Suite("A node on a full disk", .serialized)
struct DiskFullIngestTests {
    @Test("records from a peer that meet a full disk are logged as \"disk full\", and stored once the disk has space")
    func ingestResumesAfterDiskFull() throws {
        try FaultDisk.exclusive { disk in
            try Knobs.withDirectories(2) { dirs in
                let (dirA, dirB) = (dirs[0], dirs[1])
                let logA = LogLines(), logB = LogLines()
                let a = try CorruptChunkTests.node(dirA, peers: [], log: logA)
                try a.start()
                defer { a.stop() }
                var config = NodeConfig(listen: try SocketAddress(host: "127.0.0.1", port: 0))
                config.discovery = false
                config.manualPeers = [try SocketAddress(host: "127.0.0.1", port: a.listenAddress.port)]
                config.log = { line in logB.append(line) }
                let b = try Node(store: try Store(path: dirB + "/store.sqlite", disk: disk.access), identity: PrivateKey(),
                                 network: CorruptChunkTests.network, config: config)
                try b.start()
                defer { b.stop() }

                try a.write { store, key in try store.set(try Path("/before"), to: .number(1), signer: key, nowMillis: UInt64(Date().timeIntervalSince1970 * 1000)) }
                #expect(try CorruptChunkTests.eventually(20) { try b.read { try $0.value(at: try Path("/before")) } == .number(1) },
                        "log B: \(logB.lines)")

                disk.arm(.diskFull, on: [.wal, .mainDB], sticky: true)
                try a.write { store, key in try store.set(try Path("/during"), to: .string("sent while B's disk is full"), signer: key, nowMillis: UInt64(Date().timeIntervalSince1970 * 1000)) }
                #expect(CorruptChunkTests.eventually(20) { logB.lines.contains { $0.contains("could not store records: disk full: could not write \(dirB)/store.sqlite") } },
                        "log B: \(logB.lines)")
                // B goes on: it serves what it holds, and knows nothing of what it could not store.
                #expect(try b.read { try $0.value(at: try Path("/before")) } == .number(1))
                #expect(try b.read { try $0.value(at: try Path("/during")) } == .null)

                // More records while the disk is full: each batch fails again, and is not logged again.
                for index in 0..<3 {
                    try a.write { store, key in
                        try store.set(try Path("/during\(index)"), to: .number(Double(index)), signer: key, nowMillis: UInt64(Date().timeIntervalSince1970 * 1000))
                    }
                }

                disk.disarm()
                #expect(try CorruptChunkTests.eventually(30) {
                    try b.read { try $0.value(at: try Path("/during")) } == .string("sent while B's disk is full")
                        && b.read { try $0.value(at: try Path("/during2")) } == .number(2)
                }, "log B: \(logB.lines)")
                #expect(CorruptChunkTests.eventually(10) { logB.lines.contains { $0.contains("the store takes records again") } }, "log B: \(logB.lines)")
                #expect(logB.lines.filter { $0.contains("could not store records") }.count == 1, "log B: \(logB.lines)")
                #expect(try b.read { try $0.integrityCheck() } == ["ok"])
            }
        }
    }
}
