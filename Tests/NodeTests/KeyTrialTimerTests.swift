import Crypto
import Foundation
import Node
import Private
import Store
import Testing
import Transport
import Wire

/// A running node tries the key records left waiting by their author's budget on a timer of
/// its own (Protocol.md §9, "box trials of key records"), and tells its listeners of the
/// conversation one of them opens.
@Suite("Key record trials on a running node")
struct KeyTrialTimerTests {
    final class Seen: @unchecked Sendable {
        private let lock = NSLock()
        private var counts = [Digest32: Int]()
        func add(_ records: [Record]) { lock.withLock { for record in records { counts[record.id, default: 0] += 1 } } }
        func count(_ id: Digest32) -> Int { lock.withLock { counts[id] ?? 0 } }
    }

    @Test("key records stored beyond their author's budget are tried later by the node, and the group one of them opens is announced")
    func waitingRecordsTriedOnTimer() throws {
        try Knobs.withDirectories(1) { dirs in
            let path = dirs[0] + "/store.sqlite"
            let identity = PrivateKey(), mallory = PrivateKey()
            var config = NodeConfig(listen: try SocketAddress(host: "127.0.0.1", port: 0))
            config.discovery = false
            let node = try Node(store: try Store(path: path), identity: identity, network: CorruptChunkTests.network, config: config)
            try node.start()
            defer { node.stop() }
            let seen = Seen()
            let token = node.addObserver { seen.add($0) }
            defer { node.removeObserver(token) }

            // Six key records of 1,000 random boxes, then mallory's group with this node's user
            // in it: the group waits behind its author's earlier records.
            let boxes = (0..<PrivateLimits.maxBoxes).map { _ in secureRandomBytes(PrivateLimits.boxBytes) }
            var records = try (0..<6).map { i -> Record in
                let salt = [UInt8](repeating: UInt8(i + 1), count: PrivateLimits.saltBytes)
                let body = GroupKeyBody(conversation: ConversationID.group(creator: mallory.publicKey, salt: salt), epoch: 1, salt: salt,
                                        boxes: boxes, meta: secureRandomBytes(64))
                return try Record.make(body: .groupKey(body), clock: UInt64(1_000 + i) << 16, signer: mallory)
            }
            let salt = [UInt8](repeating: 0xEE, count: PrivateLimits.saltBytes)
            let group = ConversationID.group(creator: mallory.publicKey, salt: salt)
            let meta = GroupMeta(title: "late", members: [mallory.publicKey, identity.publicKey])
            let body = KeySchedule.makeKeyBody(conversation: group, epoch: 1, salt: salt, key: EpochKey(), meta: meta,
                                               author: mallory.publicKey, recipients: try meta.members.map { try $0.x25519() })
            let groupRecord = try Record.make(body: .groupKey(body), clock: 2_000 << 16, signer: mallory)
            records.append(groupRecord)
            // Stored by another process on the same data directory, as a CLI command would.
            do {
                let other = try Store(path: path)
                _ = try other.ingest(records, nowMillis: UInt64(Date().timeIntervalSince1970 * 1000))
            }
            node.pickUpLocalWritesNow()
            // Told once as a record stored, and again when its trial opened the group.
            let told = CorruptChunkTests.eventually(20) { seen.count(groupRecord.id) == 2 }
            #expect(told, "the node told its listeners of the group it opened (\(seen.count(groupRecord.id)) times)")
            #expect(try node.read { try $0.privateInfo(group)?.title } == "late")
            #expect(node.read { $0.waitingKeyRecords } == 0)
        }
    }
}
