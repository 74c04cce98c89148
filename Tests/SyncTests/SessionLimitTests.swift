import Crypto
import Testing
@testable import Sync
import Wire

/// The per-message limits of a session (Protocol.md §8.2 and §9), each shown at the limit (taken)
/// and one past it (the session closes with the peer marked as misbehaving, which the node
/// turns into a ban; BanTests shows that part on real nodes).
@Suite("Session message limits")
struct SessionLimitTests {
    let network = NetworkKey.named("test")

    /// An open session dialled by `node`, and the hand-driven peer at its other end.
    func open(_ node: MemoryNode) throws -> (PeerSession, RawPeer) {
        var session = PeerSession(role: .initiator, identity: node.identity, instance: node.instance, networkKey: network)
        var peer = RawPeer(seed: 2, network: network)
        try peer.connect(&session, source: node)
        #expect(session.isEstablished)
        return (session, peer)
    }

    /// The close among `actions`, if any, and whether it blames the peer.
    static func closed(_ actions: [PeerSession.Action]) -> Bool? {
        for case let .close(_, misbehaved) in actions { return misbehaved }
        return nil
    }

    static func ids(_ count: Int, salt: UInt8 = 0) -> [Digest32] {
        (0..<count).map { (i: Int) -> Digest32 in
            var bytes = [UInt8](repeating: 7, count: 32)
            bytes[0] = salt
            bytes[1] = UInt8(truncatingIfNeeded: i >> 16)
            bytes[2] = UInt8(truncatingIfNeeded: i >> 8)
            bytes[3] = UInt8(truncatingIfNeeded: i)
            return try! Digest32(bytes: bytes)
        }
    }

    /// Sends `message` to a fresh session; the session's actions.
    func deliver(_ message: SessionMessage, node: MemoryNode = MemoryNode(seed: 1)) throws -> [PeerSession.Action] {
        var (session, peer) = try open(node)
        return session.receive(try peer.send([message]), from: node)
    }

    @Test("want: 8,192 ids are answered, 8,193 break the protocol")
    func wantIDs() throws {
        let node = MemoryNode(seed: 1)
        let held = node.write("held", clock: 5 << 16)
        let heldID = try Record.decode(held).id
        let atLimit = try deliver(.want(Self.ids(SessionMessage.maxWantIDs - 1) + [heldID]), node: node)
        #expect(Self.closed(atLimit) == nil)
        #expect(atLimit.contains { if case .send = $0 { true } else { false } }, "the held record is sent")
        #expect(Self.closed(try deliver(.want(Self.ids(SessionMessage.maxWantIDs + 1)))) == true)
    }

    @Test("want chunks and no chunks: 64 hashes are taken, 65 break the protocol")
    func chunkHashes() throws {
        let max = SessionMessage.maxChunkHashes
        var (session, peer) = try open(MemoryNode(seed: 1))
        #expect(Self.closed(session.receive(try peer.send([.wantChunks(Self.ids(max))]), from: MemoryNode(seed: 1))) == nil)
        #expect(session.chunksToServeCount == max)
        let missing = try deliver(.noChunks(Self.ids(max)))
        #expect(Self.closed(missing) == nil)
        #expect(missing.contains { if case let .chunksMissing(hashes) = $0 { hashes.count == max } else { false } })
        #expect(Self.closed(try deliver(.wantChunks(Self.ids(max + 1)))) == true)
        #expect(Self.closed(try deliver(.noChunks(Self.ids(max + 1)))) == true)
    }

    @Test("a chunk of 1,048,576 bytes is taken; 1,048,577 bytes, or none, break the protocol")
    func chunkBytes() throws {
        let max = SessionMessage.maxChunkBytes
        #expect(max == 1_048_576)
        let bytes = [UInt8](repeating: 0xAB, count: max)
        let hash = BLAKE2b.digest256(bytes)
        let taken = try deliver(.chunk(hash, bytes))
        #expect(Self.closed(taken) == nil)
        #expect(taken.contains { if case let .chunkReceived(h, b) = $0 { h == hash && b.count == max } else { false } })
        #expect(Self.closed(try deliver(.chunk(hash, bytes + [0]))) == true)
        #expect(Self.closed(try deliver(.chunk(hash, []))) == true)
    }

    @Test("records: 19,997 in one message are taken, 19,998 exceed the 20,000 items of a message")
    func recordsPerMessage() throws {
        let atLimit = try deliver(.records([[UInt8]](repeating: [1], count: 19_997)))
        #expect(Self.closed(atLimit) == nil)
        #expect(atLimit.contains { if case let .received(records) = $0 { records.count == 19_997 } else { false } })
        #expect(Self.closed(try deliver(.records([[UInt8]](repeating: [1], count: 19_998)))) == true)
    }

    @Test("a frame of 2,097,152 bytes is taken; a frame declaring one byte more breaks the protocol")
    func frameBytes() throws {
        let max = SessionMessage.maxFrameBytes
        #expect(max == 2_097_152)
        // [4, [a, b]]: 3 bytes of array heads, a 5-byte head per byte string.
        let a = [UInt8](repeating: 1, count: 1 << 20)
        let b = [UInt8](repeating: 2, count: max - 3 - 5 - a.count - 5)
        let message = SessionMessage.records([a, b])
        #expect(message.encoded().count == max)
        let taken = try deliver(message)
        #expect(Self.closed(taken) == nil)
        #expect(taken.contains { if case let .received(records) = $0 { records == [a, b] } else { false } })

        // One byte more: refused on its length prefix, before anything is buffered for it.
        var (session, peer) = try open(MemoryNode(seed: 1))
        let prefix: [UInt8] = [0x00, 0x20, 0x00, 0x01]  // 2,097,153
        #expect(Self.closed(session.receive(try peer.sendNoise(prefix), from: MemoryNode(seed: 1))) == true)
    }

    @Test("a Noise message of 16 bytes (an empty transport message) is taken; one of 15 breaks the protocol")
    func noiseMessageBytes() throws {
        var (session, peer) = try open(MemoryNode(seed: 1))
        let empty = try peer.sendNoise([])
        #expect(empty.count == 2 + 16)
        #expect(Self.closed(session.receive(empty, from: MemoryNode(seed: 1))) == nil)
        // The session still works after it.
        #expect(Self.closed(session.receive(try peer.send([.want([])]), from: MemoryNode(seed: 1))) == nil)
        let short: [UInt8] = [0x00, 0x0F] + [UInt8](repeating: 0, count: 15)
        #expect(Self.closed(session.receive(short, from: MemoryNode(seed: 1))) == true)
    }

    @Test("records travel in batches of at most 512 KiB (with 5 bytes counted per record); a larger record alone")
    func recordBatches() throws {
        let node = MemoryNode(seed: 1)
        var ids = [Digest32]()
        for i in 0..<12 { ids.append(try Record.decode(node.write(String(repeating: "r", count: 100_000) + "\(i)", clock: UInt64(100 + i) << 16)).id) }
        ids.append(try Record.decode(node.write(String(repeating: "R", count: 600_000), clock: 200 << 16)).id)
        var (session, peer) = try open(node)
        let answer = try peer.receive(session.receive(try peer.send([.want(ids)]), from: node)).messages
        let batches = answer.compactMap { message -> [[UInt8]]? in if case let .records(r) = message { r } else { nil } }
        #expect(batches.map(\.count).reduce(0, +) == 13)
        let limit = SessionMessage.recordBatchBytes
        #expect(limit == 512 << 10)
        for (index, batch) in batches.enumerated() {
            let size = batch.map { $0.count + 5 }.reduce(0, +)
            #expect(batch.count == 1 || size <= limit, "batch \(index) holds \(size) bytes")
            // Full: the next batch's first record would not have fitted.
            if index + 1 < batches.count, let next = batches[index + 1].first {
                #expect(size + next.count > limit, "batch \(index) was sent before it was full")
            }
        }
        #expect(batches.contains { $0.count == 1 && $0[0].count > limit }, "the large record travels alone")
    }

    @Test("a malformed Negentropy message, or a reconcile reply with no round running, breaks the protocol")
    func reconcileViolations() throws {
        let node = MemoryNode(seed: 1)
        // The peer answers a round with bytes that are not a Negentropy message.
        var (session, peer) = try open(node)
        _ = try peer.receive(session.startRound(source: node))
        #expect(Self.closed(session.receive(try peer.send([.reconcileReply([0x61, 0x80, 0x01])]), from: node)) == true)
        // A reply when no round runs.
        #expect(Self.closed(try deliver(.reconcileReply([0x61]))) == true)
        // A well-formed reply to a running round is taken.
        var (running, honest) = try open(node)
        _ = try honest.receive(running.startRound(source: node))
        #expect(Self.closed(running.receive(try honest.send([.reconcileReply([0x61])]), from: node)) == nil)
    }
}
