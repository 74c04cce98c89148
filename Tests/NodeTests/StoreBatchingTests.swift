import Crypto
import Dispatch
import Foundation
@testable import Node
import Store
import Testing
import Transport
import Tree

/// How received batches reach the store: while more are being verified, verified batches wait
/// for them and go in together, in one transaction (`Node.storeVerified`).
@Suite("Storing received batches", .serialized)
struct StoreBatchingTests {
    @Test("batches verified while others are still being verified are stored with them, in one transaction")
    func batchesWaitForTheOnesBeingVerified() throws {
        let peerKey = PrivateKey()
        let peerStore = UncheckedBox(try Store(path: ":memory:"))
        let peer = try ScriptedPeer(network: CorruptChunkTests.network, identity: peerKey, source: HonestSource(store: peerStore.value))
        defer { peer.stop() }
        try Self.withHeldNode(peers: [peer.address]) { node, verifier, stored in
            #expect(Self.established(node, sessions: 1))
            for batch in 0..<3 { peer.push { Self.messages(batch: batch, count: 5, in: peerStore.value, by: peerKey) } }
            #expect(CorruptChunkTests.eventually(10) { verifier.held == 3 }, "three batches reach the verifiers")

            verifier.releaseOne()
            #expect(CorruptChunkTests.eventually(10) { node.queue.sync { node.verifying } == 2 })
            node.queue.sync {}  // the store the first result scheduled has run
            #expect(stored.sizes.isEmpty, "the first batch waits for the two being verified")
            let storedEarly = try Self.recordCount(node)
            #expect(storedEarly == 0)

            verifier.releaseOne()
            verifier.releaseOne()
            #expect(CorruptChunkTests.eventually(10) { stored.sizes == [15] }, "stored: \(stored.sizes)")
            let storedAll = try Self.recordCount(node)
            #expect(storedAll == 15)
        }
    }

    @Test("a batch that turns out invalid lets the batches that waited for it be stored")
    func anInvalidBatchEndsTheWait() throws {
        let honestKey = PrivateKey(), liarKey = PrivateKey()
        let honestStore = UncheckedBox(try Store(path: ":memory:"))
        let liarStore = UncheckedBox(try Store(path: ":memory:"))
        let honest = try ScriptedPeer(network: CorruptChunkTests.network, identity: honestKey, source: HonestSource(store: honestStore.value))
        defer { honest.stop() }
        let liar = try ScriptedPeer(network: CorruptChunkTests.network, identity: liarKey, source: HonestSource(store: liarStore.value))
        defer { liar.stop() }
        try Self.withHeldNode(peers: [honest.address, liar.address]) { node, verifier, stored in
            #expect(Self.established(node, sessions: 2))
            honest.push { Self.messages(batch: 0, count: 4, in: honestStore.value, by: honestKey) }
            #expect(CorruptChunkTests.eventually(10) { verifier.held == 1 })
            liar.push {
                // A valid record with one byte of its signature changed.
                var bytes = Self.messages(batch: 1, count: 1, in: liarStore.value, by: liarKey)[0]
                bytes[bytes.count - 1] ^= 1
                return [bytes]
            }
            #expect(CorruptChunkTests.eventually(10) { verifier.held == 2 })

            verifier.releaseOne()  // the honest batch: it waits for the liar's
            #expect(CorruptChunkTests.eventually(10) { node.queue.sync { node.verifying } == 1 })
            node.queue.sync {}
            #expect(stored.sizes.isEmpty)

            verifier.releaseOne()  // the liar's: refused, and the wait is over
            #expect(CorruptChunkTests.eventually(10) { stored.sizes == [4] }, "stored: \(stored.sizes)")
            let storedHonest = try Self.recordCount(node)
            #expect(storedHonest == 4)
            #expect(CorruptChunkTests.eventually(10) { node.queue.sync { node.gaugesOnQueue() }.sessions == 1 }, "the liar's session is closed")
        }
    }

    static func recordCount(_ node: Node) throws -> Int { try node.read { try $0.recordCount() } }

    /// Waits until the node has `sessions` sessions, all past their handshake.
    static func established(_ node: Node, sessions: Int) -> Bool {
        CorruptChunkTests.eventually(10) {
            let gauges = node.queue.sync { node.gaugesOnQueue() }
            return gauges.sessions == sessions && gauges.handshaking == 0
        }
    }

    /// `count` chat messages written into `store` by `key`, as record encodings.
    static func messages(batch: Int, count: Int, in store: Store, by key: PrivateKey) -> [[UInt8]] {
        (0..<count).map { i in
            let value = JSONValue.object(["text": .string("message \(i) of batch \(batch)"), "senderId": .string(key.publicKey.userID)])
            return try! store.set(try! Path("/conversations/c\(batch)/messages/m\(i)"), to: value, signer: key,
                                  nowMillis: SessionKnobTests.now()).encoded
        }
    }

    /// A started node dialling `peers` whose verifiers run only what the test releases, with the
    /// sizes of the batches it stores.
    static func withHeldNode(peers: [SocketAddress], _ body: (Node, HeldVerifier, StoredBatches) throws -> Void) throws {
        try Knobs.withDirectories(1) { dirs in
            let log = LogLines()
            var config = NodeConfig(listen: try SocketAddress(host: "127.0.0.1", port: 0))
            config.discovery = false
            config.manualPeers = peers
            config.log = { line in log.append(line) }
            let verifier = HeldVerifier()
            var world = NodeWorld.system
            world.scheduler = verifier
            let node = try Node(store: try Store(path: dirs[0] + "/store.sqlite"), identity: PrivateKey(),
                                network: CorruptChunkTests.network, config: config, world: world)
            let stored = StoredBatches()
            node.addObserver { records in stored.append(records.count) }
            try node.start()
            defer {
                verifier.releaseAll()
                node.stop()
            }
            try body(node, verifier, stored)
        }
    }
}

/// Dispatch, except that what is sent to the verifiers waits until the test releases it, in
/// the order it came.
final class HeldVerifier: NodeScheduler, @unchecked Sendable {
    private let lock = NSLock()
    private var jobs: [@Sendable () -> Void] = []
    private let dispatch = DispatchScheduler()

    var held: Int { lock.withLock { jobs.count } }

    func async(on queue: DispatchQueue, _ body: @escaping @Sendable () -> Void) {
        if queue === Node.verifier {
            lock.withLock { jobs.append(body) }
        } else {
            dispatch.async(on: queue, body)
        }
    }

    func after(_ delay: DispatchTimeInterval, on queue: DispatchQueue, _ body: @escaping @Sendable () -> Void) -> any Cancellable {
        dispatch.after(delay, on: queue, body)
    }

    func every(_ interval: DispatchTimeInterval, on queue: DispatchQueue, _ body: @escaping @Sendable () -> Void) -> any Cancellable {
        dispatch.every(interval, on: queue, body)
    }

    /// Runs the oldest job held on the verifiers.
    func releaseOne() {
        let job = lock.withLock { jobs.removeFirst() }
        Node.verifier.async(execute: job)
    }

    func releaseAll() {
        while held > 0 { releaseOne() }
    }
}

/// The sizes of the batches a node told its observers it stored.
final class StoredBatches: @unchecked Sendable {
    private let lock = NSLock()
    private var all: [Int] = []
    var sizes: [Int] { lock.withLock { all } }
    func append(_ size: Int) { lock.withLock { all.append(size) } }
}
