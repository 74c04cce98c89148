import Crypto
import Testing
@testable import Sync
import Wire

@Suite("Peer sessions")
struct PeerSessionTests {
    let network = NetworkKey.named("test")

    @Test("handshake, hello, then one round moves the missing records both ways")
    func reconcileBothWays() {
        let a = MemoryNode(seed: 1), b = MemoryNode(seed: 2)
        for i in 0..<50 { _ = a.write("a\(i)", clock: UInt64(1000 + i) << 16) }
        for i in 0..<70 { _ = b.write("b\(i)", clock: UInt64(1020 + i) << 16) }
        var pair = SessionPair(a, b, keyA: network, keyB: network)
        pair.run(pair.a.start())
        #expect(pair.established == 2 && pair.closed.isEmpty)
        #expect(pair.a.peer == b.identity.publicKey && pair.b.peer == a.identity.publicKey)
        let round = pair.a.startRound(source: a)
        pair.run(round)
        #expect(pair.rounds == 1)
        #expect(Set(a.records.keys) == Set(b.records.keys))
        #expect(a.records.count == 120)
    }

    @Test("a wrong network key fails the handshake and moves nothing")
    func wrongNetworkKey() {
        let a = MemoryNode(seed: 1), b = MemoryNode(seed: 2)
        _ = a.write("secret", clock: 5 << 16)
        var pair = SessionPair(a, b, keyA: network, keyB: NetworkKey.named("other"))
        pair.run(pair.a.start())
        #expect(pair.closed.count == 1 && pair.closed[0].contains("handshake failed"))
        #expect(pair.established == 0)
        #expect(!pair.b.isEstablished)
        #expect(b.records.isEmpty)
        #expect(pair.a.startRound(source: a).isEmpty || !pair.b.isEstablished)
    }

    @Test("a peer that is not the announced identity is refused")
    func wrongIdentity() {
        let a = MemoryNode(seed: 1), b = MemoryNode(seed: 2), c = MemoryNode(seed: 3)
        var pair = SessionPair(a, b, keyA: network, keyB: network)
        pair.a = PeerSession(role: .initiator, identity: a.identity, instance: a.instance, networkKey: network,
                             expectedAuthor: c.identity.publicKey)
        pair.run(pair.a.start())
        #expect(pair.closed.contains { $0.contains("not the announced") })
    }

    @Test("a session counts the records it sends: pushed, offered in a round, or answering a want")
    func countsRecordsSent() {
        let a = MemoryNode(seed: 1), b = MemoryNode(seed: 2)
        let early = a.write("early", clock: 3 << 16)
        var pair = SessionPair(a, b, keyA: network, keyB: network)
        #expect(pair.a.push([early]).isEmpty && pair.a.recordsSent == 0)  // nothing goes out before the handshake
        pair.run(pair.a.start())
        for i in 0..<4 { _ = a.write("a\(i)", clock: UInt64(10 + i) << 16) }
        for i in 0..<6 { _ = b.write("b\(i)", clock: UInt64(20 + i) << 16) }
        pair.run(pair.a.startRound(source: a))
        #expect(pair.a.recordsSent == 5 && pair.b.recordsSent == 6)
        pair.run(pair.a.push([a.write("pushed", clock: 30 << 16)]))
        #expect(pair.a.recordsSent == 6 && b.records.count == a.records.count)
    }

    @Test("pushed records arrive; garbage after the handshake closes the session")
    func pushAndGarbage() {
        let a = MemoryNode(seed: 1), b = MemoryNode(seed: 2)
        var pair = SessionPair(a, b, keyA: network, keyB: network)
        pair.run(pair.a.start())
        let record = a.write("pushed", clock: 9 << 16)
        pair.run(pair.a.push([record]))
        #expect(b.records.count == 1)
        let actions = pair.b.receive([0, 40] + [UInt8](repeating: 7, count: 40), from: b)
        #expect(actions.contains { if case .close(_, true) = $0 { return true } else { return false } })
    }
}
