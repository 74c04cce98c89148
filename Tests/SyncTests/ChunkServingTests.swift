import Crypto
import Testing
@testable import Sync

/// A session answers chunk requests a part at a time, when its node asks (`serveChunks`).
@Suite("Chunk serving")
struct ChunkServingTests {
    let network = NetworkKey.named("test")

    /// What `actions` (from one side) make the other side do.
    static func deliver(_ actions: [PeerSession.Action], to session: inout PeerSession, source: RecordSource) -> [PeerSession.Action] {
        actions.flatMap { action -> [PeerSession.Action] in
            guard case let .send(bytes) = action else { return [] }
            return session.receive(bytes, from: source)
        }
    }

    static func received(_ actions: [PeerSession.Action]) -> [Digest32] {
        actions.compactMap { if case let .chunkReceived(hash, _) = $0 { hash } else { nil } }
    }

    static func missing(_ actions: [PeerSession.Action]) -> [Digest32] {
        actions.flatMap { action -> [Digest32] in
            if case let .chunksMissing(hashes) = action { return hashes }
            return []
        }
    }

    @Test("requests are queued, then answered in order, about maxBytes a part, with the unheld ones listed")
    func servedInParts() {
        let a = MemoryNode(seed: 1), b = MemoryNode(seed: 2)
        let held = (0..<3).map { b.addChunk([UInt8](repeating: UInt8($0), count: 64 << 10)) }
        let unheld = try! Digest32(bytes: [UInt8](repeating: 9, count: 32))
        var pair = SessionPair(a, b, keyA: network, keyB: network)
        pair.run(pair.a.start())
        #expect(pair.established == 2)

        // The request itself is answered by nothing: the chunks wait for the node.
        let request = pair.a.requestChunks([held[0], held[1], held[0], unheld, held[2]])
        #expect(Self.deliver(request, to: &pair.b, source: b).isEmpty)
        #expect(pair.b.chunksToServeCount == 4)  // each chunk once per request

        // 100,000 bytes a part: the second chunk goes past it and ends the part.
        let first = Self.deliver(pair.b.serveChunks(from: b, maxBytes: 100_000), to: &pair.a, source: a)
        #expect(Self.received(first) == [held[0], held[1]])
        #expect(first.allSatisfy { if case let .chunkReceived(hash, bytes) = $0 { b.chunks[hash] == bytes } else { false } })
        #expect(pair.b.chunksToServeCount == 2)

        let second = Self.deliver(pair.b.serveChunks(from: b, maxBytes: 100_000), to: &pair.a, source: a)
        #expect(Self.received(second) == [held[2]])
        #expect(Self.missing(second) == [unheld])
        #expect(pair.b.chunksToServeCount == 0)
        #expect(pair.b.serveChunks(from: b, maxBytes: 100_000).isEmpty)

        // A part holds at least one chunk, however small the limit.
        _ = Self.deliver(pair.a.requestChunks([held[1]]), to: &pair.b, source: b)
        let single = Self.deliver(pair.b.serveChunks(from: b, maxBytes: 1), to: &pair.a, source: a)
        #expect(Self.received(single) == [held[1]])
    }

    @Test("a session that closes drops the requests it had queued")
    func closingDropsQueue() {
        let a = MemoryNode(seed: 1), b = MemoryNode(seed: 2)
        let hash = b.addChunk([1, 2, 3])
        var pair = SessionPair(a, b, keyA: network, keyB: network)
        pair.run(pair.a.start())
        _ = Self.deliver(pair.a.requestChunks([hash]), to: &pair.b, source: b)
        #expect(pair.b.chunksToServeCount == 1)
        let garbage = pair.b.receive([0, 40] + [UInt8](repeating: 7, count: 40), from: b)
        #expect(garbage.contains { if case .close = $0 { true } else { false } })
        #expect(pair.b.chunksToServeCount == 0)
        #expect(pair.b.serveChunks(from: b, maxBytes: 1 << 20).isEmpty)
    }
}

extension ChunkServingTests {
    @Test("a peer that asks again before its requests are answered gets every chunk once, in order")
    func requestsWhileServing() {
        let a = MemoryNode(seed: 1), b = MemoryNode(seed: 2)
        let held = (0..<64).map { b.addChunk([UInt8(truncatingIfNeeded: $0), 1, 2, 3]) }
        var pair = SessionPair(a, b, keyA: network, keyB: network)
        pair.run(pair.a.start())
        // 40 requests of all 64 chunks; 60 are served between two requests (12 parts of 5), so
        // the queue does not run empty until the end, after more than a thousand were served.
        var asked = [Digest32](), received = [Digest32]()
        for _ in 0..<40 {
            _ = Self.deliver(pair.a.requestChunks(held), to: &pair.b, source: b)
            asked += held
            for _ in 0..<12 { received += Self.received(Self.deliver(pair.b.serveChunks(from: b, maxBytes: 20), to: &pair.a, source: a)) }
        }
        while pair.b.chunksToServeCount > 0 {
            received += Self.received(Self.deliver(pair.b.serveChunks(from: b, maxBytes: 20), to: &pair.a, source: a))
        }
        #expect(received == asked)
    }
}
