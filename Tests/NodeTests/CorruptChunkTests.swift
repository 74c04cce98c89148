import Crypto
import Dispatch
import Foundation
import Node
import Store
import Sync
import Testing
import Tree
import Transport
import Wire

/// A real node fetching a file from two peers over loopback TCP: an honest node, and a
/// hand-built peer that speaks the session protocol faithfully but serves corrupted chunks.
@Suite("Chunks from a lying peer", .serialized)
struct CorruptChunkTests {
    static let network = NetworkKey.named("corrupt-chunk-test")

    /// A JPEG-looking file of `chunks` whole chunks plus a bit (only its first bytes are sniffed).
    static func imageBytes(chunks: Int) -> [UInt8] {
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        var bytes: [UInt8] = [0xFF, 0xD8, 0xFF, 0xE0]
        bytes.reserveCapacity(chunks * Store.chunkSize + 100)
        while bytes.count < chunks * Store.chunkSize + 100 {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            bytes.append(UInt8(truncatingIfNeeded: state >> 33))
        }
        return bytes
    }

    static func tempDirectory() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("lanchat-node-test-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    static func node(_ dir: String, peers: [SocketAddress], log: LogLines) throws -> Node {
        var config = NodeConfig(listen: try SocketAddress(host: "127.0.0.1", port: 0))
        config.discovery = false
        config.manualPeers = peers
        config.log = { line in log.append(line) }
        return try Node(store: try Store(path: dir + "/store.sqlite"), identity: PrivateKey(), network: network, config: config)
    }

    /// Polls `condition` every 0.1 s until it holds or `seconds` pass.
    static func eventually(_ seconds: Double, _ condition: () throws -> Bool) rethrows -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if try condition() { return true }
            usleep(100_000)
        }
        return try condition()
    }

    @Test("a corrupted chunk is refused, fetched from the honest peer, and the liar disconnected")
    func corruptChunkRefetched() throws {
        let bytes = Self.imageBytes(chunks: 40)
        let path = "images/lie.jpg"
        let dirA = try Self.tempDirectory(), dirB = try Self.tempDirectory()
        defer { try? FileManager.default.removeItem(atPath: dirA); try? FileManager.default.removeItem(atPath: dirB) }
        let logA = LogLines(), logB = LogLines()

        let a = try Self.node(dirA, peers: [], log: logA)
        try a.start()
        defer { a.stop() }
        let info = try a.write { store, key in
            try store.putFile(path, bytes: bytes, signer: key, nowMillis: UInt64(Date().timeIntervalSince1970 * 1000))
        }
        // The liar holds every chunk of the file, each with one bit flipped.
        var corrupted = [Digest32: [UInt8]]()
        for (index, hash) in info.manifest.chunks.enumerated() {
            var chunk = Array(bytes[info.manifest.range(ofChunk: index)])
            chunk[chunk.count / 2] ^= 0x10
            corrupted[hash] = chunk
        }
        let liar = try ScriptedPeer(network: Self.network, source: CorruptSource(chunks: corrupted))
        defer { liar.stop() }

        let b = try Self.node(dirB, peers: [a.listenAddress, liar.address], log: logB)
        try b.start()
        defer { b.stop() }
        // Both sessions up and the records here, then ask for the file.
        #expect(Self.eventually(20) { b.status().peers.filter(\.connected).count == 2 }, "peers: \(b.status().peers)")
        #expect(try Self.eventually(20) { try b.read { try $0.fileInfo(path) } != nil })
        let asked = try #require(b.fetchFile(path))
        #expect(asked.missing == info.manifest.chunks.count)

        #expect(try Self.eventually(30) { try b.read { try $0.fileInfo(path)?.isComplete } == true }, "log: \(logB.lines)")
        #expect(try b.read { try $0.readFile(path) } == bytes)
        // The liar was asked, answered with a bad chunk, and was disconnected and banned, once.
        #expect(liar.chunksServed > 0)
        #expect(Self.eventually(10) { liar.sessionsClosed >= 1 })
        let bans = logB.lines.filter { $0.contains("banned user \(liar.identity.publicKey.userID)") && $0.contains("does not match its hash") }
        #expect(bans.count == 1, "log: \(logB.lines)")
        #expect(b.status().peers.filter(\.connected).count == 1)
        // Every stored chunk is the right one.
        for hash in info.manifest.chunks {
            let stored = try b.read { try $0.chunk(hash) }
            #expect(stored.map { BLAKE2b.digest256($0) } == hash)
        }
    }
}

extension CorruptChunkTests {
    @Test("chunks and a reconciliation round in one read keep the session's nonces in order")
    func chunksInterleavedWithRound() throws {
        // The peer holds 24 small photos, each referenced by a message, so the node asks for
        // many chunks at once (its window) and gets them in one read, followed by the peer's
        // reconcile message (the peer dialled the node, so it starts rounds). Each chunk stored
        // makes the node request another at once: that request must not overtake the reply to
        // the reconcile message already encrypted.
        let peerKey = PrivateKey()
        let peerStore = try Store(path: ":memory:")
        let now = UInt64(Date().timeIntervalSince1970 * 1000)
        var photos = [String: [UInt8]]()
        for i in 0..<24 {
            let bytes: [UInt8] = [0xFF, 0xD8, 0xFF, 0xE0] + Array("photo number \(i)".utf8) + [UInt8](repeating: UInt8(i), count: 500)
            let path = "images/p\(i).jpg"
            try peerStore.putFile(path, bytes: bytes, signer: peerKey, nowMillis: now)
            _ = try peerStore.push(try Path("/conversations/c/messages"), value: .object([
                "senderId": .string(peerKey.publicKey.userID), "photoURL": .string("gs://lanchat/\(path)"),
            ]), signer: peerKey, nowMillis: now)
            photos[path] = bytes
        }
        let peer = try ScriptedPeer(network: Self.network, identity: peerKey, source: HonestSource(store: peerStore), roundWithChunks: true)
        defer { peer.stop() }

        let dir = try Self.tempDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let log = LogLines()
        let b = try Self.node(dir, peers: [], log: log)
        try b.start()
        defer { b.stop() }
        // The peer dials, so it is the side that starts rounds.
        peer.dial(b.listenAddress)
        let complete = try Self.eventually(20) {
            try b.read { store in try photos.keys.allSatisfy { try store.fileInfo($0)?.isComplete == true } }
        }
        #expect(complete, "log: \(log.lines); peer closed for: \(peer.reasons)")
        for (path, bytes) in photos { #expect(try b.read { try $0.readFile(path) } == bytes) }
        #expect(peer.reasons.isEmpty)
        #expect(peer.sessionsClosed == 0)
        #expect(peer.chunksServed >= photos.count)
        #expect(peer.roundsStartedWithChunks > 0, "the case under test did not arise")
    }
}

/// Log lines of a node, appended on its queue and read by the test.
final class LogLines: @unchecked Sendable {
    private let lock = NSLock()
    private var storage: [String] = []
    func append(_ line: String) { lock.lock(); storage.append(line); lock.unlock() }
    var lines: [String] { lock.lock(); defer { lock.unlock() }; return storage }
}

/// A peer built from the session state machine and a TCP listener: it completes the handshake
/// and reconciliation like any node, and answers from its `RecordSource`, which may lie. It
/// accepts sessions, or dials one with `dial(_:)`. On a session it dialled it starts a round
/// once established and, with `roundWithChunks`, another in the same write as the chunks it
/// sends, as a node's timer may (only the dialler starts rounds, Protocol.md §8.3).
final class ScriptedPeer: @unchecked Sendable {
    let queue = DispatchQueue(label: "scripted-peer")
    let identity: PrivateKey
    let instance = secureRandomBytes(Beacon.instanceByteCount)
    let network: NetworkKey
    let source: any RecordSource & ServedCount
    let roundWithChunks: Bool
    private let listener: TCPListener
    private var connections: [ObjectIdentifier: TCPConnection] = [:]
    private var closedCount = 0
    private var closeReasons: [String] = []
    private var roundsWithChunks = 0
    private var pushers: [ObjectIdentifier: ([[UInt8]]) -> Void] = [:]

    var address: SocketAddress { listener.localAddress }
    var chunksServed: Int { queue.sync { source.served.value } }
    var sessionsClosed: Int { queue.sync { closedCount } }
    /// Why this side closed sessions (the protocol errors it saw).
    var reasons: [String] { queue.sync { closeReasons } }
    /// Rounds started in the same write as chunks.
    var roundsStartedWithChunks: Int { queue.sync { roundsWithChunks } }

    init(network: NetworkKey, identity: PrivateKey = PrivateKey(), source: any RecordSource & ServedCount, roundWithChunks: Bool = false) throws {
        self.network = network
        self.identity = identity
        self.source = source
        self.roundWithChunks = roundWithChunks
        listener = try TCPListener(bind: try SocketAddress(host: "127.0.0.1", port: 0), queue: queue)
        queue.sync { listener.start { [self] connection in accept(connection) } }
    }

    private func accept(_ connection: TCPConnection) {
        run(connection, PeerSession(role: .responder, identity: identity, instance: instance, networkKey: network))
    }

    /// Opens a session to `address`, as its dialler.
    func dial(_ address: SocketAddress) {
        TCPConnection.connect(to: address, queue: queue, timeout: .seconds(5)) { [self] result in
            guard case let .success(connection) = result else { return }
            run(connection, PeerSession(role: .initiator, identity: identity, instance: instance, networkKey: network))
        }
    }

    private func run(_ connection: TCPConnection, _ session: PeerSession) {
        var machine = session
        let key = ObjectIdentifier(connection)
        connections[key] = connection
        func carryOut(_ actions: [PeerSession.Action]) {
            var out = [UInt8]()
            for action in actions {
                switch action {
                case let .send(bytes):
                    out += bytes
                case let .close(reason, _):
                    closeReasons.append(reason)
                    if !out.isEmpty { connection.write(out) }
                    connection.close()
                    return
                default:
                    break
                }
            }
            if !out.isEmpty { connection.write(out) }
        }
        pushers[key] = { records in carryOut(machine.push(records)) }
        connection.start(onRead: { [self] bytes in
            let servedBefore = source.served.value
            let wasEstablished = machine.isEstablished
            var actions = machine.receive(bytes, from: source)
            actions += machine.serveChunks(from: source, maxBytes: .max)  // all at once, in this write
            if !wasEstablished && machine.isEstablished {
                actions += machine.startRound(source: source)
            } else if roundWithChunks, source.served.value > servedBefore {
                let round = machine.startRound(source: source)
                if !round.isEmpty { roundsWithChunks += 1 }
                actions += round
            }
            carryOut(actions)
        }, onClose: { [self] _ in
            connections.removeValue(forKey: key)
            pushers.removeValue(forKey: key)
            closedCount += 1
        })
        carryOut(machine.start())
    }

    /// Runs `make` on this peer's queue and pushes the records it returns on every open session,
    /// as a node pushes its new records.
    func push(_ make: @escaping @Sendable () -> [[UInt8]]) {
        queue.async { [self] in
            let records = make()
            for pusher in pushers.values { pusher(records) }
        }
    }

    func stop() {
        queue.sync {
            listener.close()
            for connection in connections.values { connection.close() }
        }
    }
}

/// A `RecordSource` that counts the chunks it serves.
protocol ServedCount {
    var served: Counter { get }
}

/// No records, and a corrupted copy of every chunk.
struct CorruptSource: RecordSource, ServedCount {
    let chunks: [Digest32: [UInt8]]
    let served = Counter()

    func reconciliationItems() -> NegentropySortedItems { NegentropySortedItems([]) }
    func records(_ ids: [Digest32]) -> [[UInt8]] { [] }
    func summary() -> (count: UInt64, fingerprint: [UInt8]) { (0, [UInt8](repeating: 0, count: 16)) }
    func chunk(_ hash: Digest32) -> [UInt8]? {
        guard let bytes = chunks[hash] else { return nil }
        served.value += 1
        return bytes
    }
}

/// An honest source: the records and chunks of a store (used on the peer's queue only).
struct HonestSource: RecordSource, ServedCount {
    let store: Store
    let served = Counter()

    func reconciliationItems() -> NegentropySortedItems {
        NegentropySortedItems(((try? store.recordKeys()) ?? []).compactMap { NegentropyItem(timestamp: $0.clock, id: $0.id) })
    }
    func records(_ ids: [Digest32]) -> [[UInt8]] {
        var clocks = [[UInt8]: UInt64]()
        for key in (try? store.recordKeys()) ?? [] { clocks[key.id] = key.clock }
        return (try? store.records(withKeys: ids.compactMap { id in clocks[id.bytes].map { (clock: $0, id: id) } })) ?? []
    }
    func summary() -> (count: UInt64, fingerprint: [UInt8]) { (UInt64((try? store.recordCount()) ?? 0), [UInt8](repeating: 0, count: 16)) }
    func chunk(_ hash: Digest32) -> [UInt8]? {
        guard let bytes = try? store.chunk(hash) else { return nil }
        served.value += 1
        return bytes
    }
}

final class Counter: @unchecked Sendable {
    var value = 0
}
