import Crypto
import Foundation
@testable import Node
import Store
import Sync
import Testing
import Tree
import Wire

/// The record set a node loads beside its queue as it starts (RecordSetLoad.swift): whenever it
/// is read, and whatever another process writes meanwhile, it holds every record exactly once,
/// so counts and fingerprints announced to peers match the store.
@Suite("Record set loaded beside the queue")
struct RecordSetLoadTests {
    /// Count and fingerprint of every record in the store, worked out from scratch.
    static func expected(_ path: String) throws -> (Int, [UInt8]) {
        let keys = try Store(path: path).recordKeys()
        var running = NegentropyRunningFingerprint()
        for key in keys { running.add(key.id) }
        return (keys.count, running.fingerprint)
    }

    static func write(_ store: Store, _ count: Int, prefix: String, signer: PrivateKey) throws {
        for i in 0..<count {
            _ = try store.set(try Path("/load/\(prefix)\(i)"), to: .string("value \(i)"), signer: signer, nowMillis: SessionKnobTests.now())
        }
    }

    @Test("records written by another process before and after the load are each counted once", arguments: [false, true])
    func writesAroundTheLoad(readFirst: Bool) throws {
        try Knobs.withDirectories(1) { dirs in
            let path = dirs[0] + "/store.sqlite"
            let signer = PrivateKey()
            try Self.write(try Store(path: path), 40, prefix: "before", signer: signer)
            let node = try Knobs.node(dirs[0], log: LogLines())
            // Either the queue takes the set at once (reading it itself if the job has not begun),
            // or after the job has surely finished.
            if readFirst {
                _ = node.queue.sync { node.recordSetSummaryOnQueue() }
            } else {
                #expect(CorruptChunkTests.eventually(10) { node.queue.sync { node.loadedRecordSet != nil } })
            }
            // Another process (the CLI) writes while the node runs; the node picks them up.
            try Self.write(try Store(path: path), 7, prefix: "after", signer: signer)
            node.pickUpLocalWritesNow()
            let (count, fingerprint) = try Self.expected(path)
            #expect(count >= 47)
            #expect(CorruptChunkTests.eventually(10) {
                let summary = node.queue.sync { node.recordSetSummaryOnQueue() }
                return summary.count == count && summary.fingerprint == fingerprint
            }, "the node's set does not match the store's \(count) records")
        }
    }

    @Test("a record written after the node was made, before its set was read, is not in the set twice")
    func writeBeforeTheSetIsRead() throws {
        try Knobs.withDirectories(1) { dirs in
            let path = dirs[0] + "/store.sqlite"
            let signer = PrivateKey()
            try Self.write(try Store(path: path), 10, prefix: "before", signer: signer)
            let load = RecordSetLoad(reader: try Store(path: path).recordKeyReader, through: try Store(path: path).lastSequence())
            try Self.write(try Store(path: path), 3, prefix: "after", signer: signer)
            // Read after the writes: only the records up to the bound are in it.
            load.run()
            let set = try load.take()
            #expect(set.count == 10)
        }
    }
}
