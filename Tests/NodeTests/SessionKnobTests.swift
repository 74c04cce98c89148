import Crypto
import Dispatch
import Foundation
@testable import Node
import Store
import Testing
import Transport
import Tree

/// The session limits of Protocol.md §9, each with its `NodeConfig` knob turned down: the ban
/// time, the session cap, the handshake-and-hello timeout and the idle timeout. Each test shows
/// the node at the limit (what it still allows) and just past it (what it refuses or closes).
@Suite("Session limits, knobs turned down", .serialized)
struct SessionKnobTests {
    static func now() -> UInt64 { UInt64(Date().timeIntervalSince1970 * 1000) }

    @Test("a ban lasts banSeconds: the banned peer is not redialled before, and is redialled (and banned again) after")
    func banLastsBanSeconds() throws {
        let liarKey = PrivateKey()
        let liarStore = try Store(path: ":memory:")
        _ = try liarStore.set(try Path("/notes/liar"), to: .string("forged"), signer: liarKey, nowMillis: Self.now())
        let liar = try ScriptedPeer(network: CorruptChunkTests.network, identity: liarKey, source: CorruptRecordSource(store: liarStore))
        defer { liar.stop() }
        let dir = try CorruptChunkTests.tempDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let log = LogLines()
        let banSeconds = 1.5
        let node = try Knobs.node(dir, peers: [liar.address], log: log) { config in
            config.banSeconds = banSeconds
            config.antiEntropyInterval = .milliseconds(100)  // manual peers are redialled on this tick
        }
        try node.start()
        defer { node.stop() }

        let banLine = "banned user \(liarKey.publicKey.userID) for 1.5 s: sent an invalid record"
        func bans() -> Int { log.lines.filter { $0 == banLine }.count }
        #expect(CorruptChunkTests.eventually(20) { bans() == 1 }, "log: \(log.lines)")
        let firstBan = Date()
        #expect(node.queue.sync { node.isBanned(liarKey.publicKey) && node.isBanned(liar.address) })
        // Past the ban, the manual peer is dialled again, lies again, and is banned again.
        #expect(CorruptChunkTests.eventually(20) { bans() == 2 }, "log: \(log.lines)")
        let gap = Knobs.since(firstBan)
        #expect(gap >= banSeconds - 0.15, "banned again after \(gap) s, before the ban of \(banSeconds) s ended")
        #expect(gap < banSeconds + 5, "redialled only after \(gap) s")
        // Until then it was dialled once only: one session per ban.
        #expect(CorruptChunkTests.eventually(5) { liar.sessionsClosed == 2 })
        #expect(try node.read { try $0.value(at: try Path("/notes/liar")) } == .null)
    }

    @Test("maxSessions sessions are taken; one more is refused at once, and taken when a slot frees")
    func sessionCap() throws {
        let dir = try CorruptChunkTests.tempDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let log = LogLines()
        let node = try Knobs.node(dir, log: log) { $0.maxSessions = 2 }
        try node.start()
        defer { node.stop() }
        func connected() -> Int { node.status().peers.filter(\.connected).count }

        let peers = try (0..<3).map { _ in
            try ScriptedPeer(network: CorruptChunkTests.network, source: HonestSource(store: try Store(path: ":memory:")))
        }
        defer { for peer in peers { peer.stop() } }
        // At the cap: two sessions.
        peers[0].dial(node.listenAddress)
        #expect(CorruptChunkTests.eventually(10) { connected() == 1 }, "log: \(log.lines)")
        peers[1].dial(node.listenAddress)
        #expect(CorruptChunkTests.eventually(10) { connected() == 2 }, "log: \(log.lines)")
        // Past it: the third is closed before any handshake, and nothing else changes.
        peers[2].dial(node.listenAddress)
        #expect(CorruptChunkTests.eventually(10) { peers[2].sessionsClosed == 1 })
        #expect(connected() == 2)
        #expect(node.queue.sync { node.sessions.count } == 2)
        #expect(peers[0].sessionsClosed == 0 && peers[1].sessionsClosed == 0)
        #expect(!log.lines.contains { $0.contains("banned") }, "a full node bans nobody: \(log.lines)")
        // A slot frees: the third gets in.
        peers[0].stop()
        #expect(CorruptChunkTests.eventually(10) { connected() == 1 })
        peers[2].dial(node.listenAddress)
        #expect(CorruptChunkTests.eventually(10) {
            node.status().peers.contains { $0.connected && $0.userID == peers[2].identity.publicKey.userID }
        }, "log: \(log.lines)")
    }

    @Test("handshakeTimeout closes a connection that sends nothing, or stops after the handshake without a hello; one that finished in time stays")
    func handshakeTimeout() throws {
        let dir = try CorruptChunkTests.tempDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let log = LogLines()
        let timeout = 0.4
        let node = try Knobs.node(dir, log: log) { $0.handshakeTimeout = .milliseconds(Int(timeout * 1000)) }
        try node.start()
        defer { node.stop() }

        // An honest peer completes its handshake and hello well within the timeout.
        let honest = try ScriptedPeer(network: CorruptChunkTests.network, source: HonestSource(store: try Store(path: ":memory:")))
        defer { honest.stop() }
        honest.dial(node.listenAddress)
        #expect(CorruptChunkTests.eventually(10) { node.status().peers.contains(where: \.connected) }, "log: \(log.lines)")

        let silent = try StalledClient(to: node.listenAddress, network: CorruptChunkTests.network, stage: .connected)
        defer { silent.stop() }
        let noHello = try StalledClient(to: node.listenAddress, network: CorruptChunkTests.network, stage: .handshaken)
        defer { noHello.stop() }
        #expect(CorruptChunkTests.eventually(10) { noHello.handshaken }, "the Noise handshake did not complete")
        #expect(CorruptChunkTests.eventually(10) { silent.closed != nil && noHello.closed != nil })
        for client in [silent, noHello] {
            let lived = try #require(client.closed).timeIntervalSince(client.connectedAt)
            #expect(lived >= timeout - 0.05 && lived < timeout + 3, "closed after \(lived) s, the timeout is \(timeout) s")
        }
        // The honest session, older than both, outlived the timeout; nobody was banned for being slow.
        #expect(honest.sessionsClosed == 0)
        #expect(node.status().peers.filter(\.connected).count == 1)
        #expect(!log.lines.contains { $0.contains("banned") }, "log: \(log.lines)")
    }

    @Test("idleTimeoutSeconds closes a session silent for that long; one with rounds going on stays")
    func idleTimeout() throws {
        let dirA = try CorruptChunkTests.tempDirectory(), dirB = try CorruptChunkTests.tempDirectory()
        defer { try? FileManager.default.removeItem(atPath: dirA); try? FileManager.default.removeItem(atPath: dirB) }
        let logA = LogLines(), logB = LogLines()
        let idle = 0.6
        func configure(_ config: inout NodeConfig) {
            config.idleTimeoutSeconds = idle
            config.antiEntropyInterval = .milliseconds(100)
        }
        let a = try Knobs.node(dirA, log: logA, configure)
        try a.start()
        defer { a.stop() }
        // B dials A and runs a round every 100 ms: traffic well within the idle limit.
        let b = try Knobs.node(dirB, peers: [a.listenAddress], log: logB, configure)
        try b.start()
        defer { b.stop() }
        #expect(CorruptChunkTests.eventually(10) { a.status().peers.contains { $0.connected && $0.userID == b.userID } })
        let busySince = Date()

        // A scripted peer dials A, runs one round, then says nothing: A starts no rounds on a
        // session it accepted, so the session goes silent.
        let quiet = try ScriptedPeer(network: CorruptChunkTests.network, source: HonestSource(store: try Store(path: ":memory:")))
        defer { quiet.stop() }
        let dialled = Date()
        quiet.dial(a.listenAddress)
        #expect(CorruptChunkTests.eventually(10) { quiet.sessionsClosed == 1 }, "log A: \(logA.lines)")
        let lived = Knobs.since(dialled)
        #expect(lived >= idle, "closed after \(lived) s, the idle limit is \(idle) s")
        #expect(logA.lines.contains("lost \(quiet.identity.publicKey.userID.prefix(8)): idle"), "log A: \(logA.lines)")
        // The busy session has lived past the idle limit, and is still up.
        #expect(Knobs.since(busySince) > idle)
        #expect(a.status().peers.contains { $0.connected && $0.userID == b.userID }, "log A: \(logA.lines)")
        #expect(!logA.lines.contains("lost \(b.userID.prefix(8)): idle"))
    }
}
