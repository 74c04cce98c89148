import Crypto
import Dispatch
import Foundation
@testable import Node
import Store
import Sync
import Testing
import Transport
import Tree

/// Bans on one host, as on a machine running several nodes: a peer that breaks the protocol is
/// banned by its identity once its handshake proved it, by address and port before that, and
/// never by its host, so the host's other nodes still sync.
@Suite("Bans of misbehaving peers", .serialized)
struct BanTests {
    static func now() -> UInt64 { UInt64(Date().timeIntervalSince1970 * 1000) }

    @Test("a member that sends an invalid record is banned by identity; an honest node on its host still syncs")
    func invalidRecordBansIdentity() throws {
        // The liar holds one record and serves it with a byte flipped.
        let liarKey = PrivateKey()
        let liarStore = try Store(path: ":memory:")
        _ = try liarStore.set(try Path("/notes/liar"), to: .string("forged"), signer: liarKey, nowMillis: Self.now())
        let liar = try ScriptedPeer(network: CorruptChunkTests.network, identity: liarKey, source: CorruptRecordSource(store: liarStore))
        defer { liar.stop() }

        let dirR = try CorruptChunkTests.tempDirectory(), dirH = try CorruptChunkTests.tempDirectory()
        defer { try? FileManager.default.removeItem(atPath: dirR); try? FileManager.default.removeItem(atPath: dirH) }
        let logR = LogLines()
        let receiver = try CorruptChunkTests.node(dirR, peers: [liar.address], log: logR)
        try receiver.start()
        defer { receiver.stop() }

        let banLine = "banned user \(liarKey.publicKey.userID) for 60 s: sent an invalid record"
        #expect(CorruptChunkTests.eventually(20) { logR.lines.contains(banLine) }, "log: \(logR.lines)")
        #expect(receiver.queue.sync { receiver.isBanned(liarKey.publicKey) })
        // Its session address is covered too: the manual peer is not redialled while banned.
        #expect(receiver.queue.sync { receiver.isBanned(liar.address) })
        usleep(3_000_000)
        #expect(liar.sessionsClosed == 1)
        #expect(try receiver.read { try $0.value(at: try Path("/notes/liar")) } == .null)

        // An honest node on the same host dials in after the ban, and syncs both ways.
        let logH = LogLines()
        let honest = try CorruptChunkTests.node(dirH, peers: [receiver.listenAddress], log: logH)
        try honest.start()
        defer { honest.stop() }
        try honest.write { store, key in _ = try store.set(try Path("/notes/honest"), to: .string("before"), signer: key, nowMillis: Self.now()) }
        #expect(try CorruptChunkTests.eventually(20) {
            try receiver.read { try $0.value(at: try Path("/notes/honest")) } == .string("before")
        }, "receiver log: \(logR.lines)")
        try honest.write { store, key in _ = try store.set(try Path("/notes/pushed"), to: .string("after"), signer: key, nowMillis: Self.now()) }
        #expect(try CorruptChunkTests.eventually(20) {
            try receiver.read { try $0.value(at: try Path("/notes/pushed")) } == .string("after")
        }, "receiver log: \(logR.lines)")
        #expect(logR.lines.filter { $0.contains("banned") } == [banLine])
        #expect(!logH.lines.contains { $0.contains("banned") })
    }

    @Test("a failed handshake bans that address and port only; another node on the same host connects")
    func failedHandshakeBansEndpoint() throws {
        // A listener that answers the node's first handshake message with a malformed one.
        let fake = try GarbagePeer()
        defer { fake.stop() }
        let dirR = try CorruptChunkTests.tempDirectory(), dirH = try CorruptChunkTests.tempDirectory()
        defer { try? FileManager.default.removeItem(atPath: dirR); try? FileManager.default.removeItem(atPath: dirH) }
        let logR = LogLines()
        let receiver = try CorruptChunkTests.node(dirR, peers: [fake.address], log: logR)
        try receiver.start()
        defer { receiver.stop() }

        // Dialled: the peer's session address is banned, and not dialled again meanwhile.
        let dialled = "banned address \(fake.address) for 60 s: malformed session message"
        #expect(CorruptChunkTests.eventually(20) { logR.lines.contains { $0.hasPrefix(dialled) } }, "log: \(logR.lines)")
        // Accepted: a client whose first message is malformed is banned at its own port.
        let client = try GarbageClient(to: receiver.listenAddress)
        let accepted = "banned address \(client.localAddress) for 60 s: malformed session message"
        #expect(CorruptChunkTests.eventually(20) { logR.lines.contains { $0.hasPrefix(accepted) } }, "log: \(logR.lines)")
        #expect(CorruptChunkTests.eventually(10) { client.closed })
        usleep(3_000_000)
        #expect(fake.connections == 1)

        // An honest node on the same host dials in and syncs.
        let honest = try CorruptChunkTests.node(dirH, peers: [receiver.listenAddress], log: LogLines())
        try honest.start()
        defer { honest.stop() }
        try honest.write { store, key in _ = try store.set(try Path("/notes/honest"), to: .string("hi"), signer: key, nowMillis: Self.now()) }
        #expect(try CorruptChunkTests.eventually(20) {
            try receiver.read { try $0.value(at: try Path("/notes/honest")) } == .string("hi")
        }, "receiver log: \(logR.lines)")
        #expect(logR.lines.filter { $0.contains("banned") }.count == 2, "log: \(logR.lines)")
    }
}

/// The records of a store, each served with its last byte flipped (an invalid signature).
struct CorruptRecordSource: RecordSource, ServedCount {
    let honest: HonestSource
    var served: Counter { honest.served }

    init(store: Store) { honest = HonestSource(store: store) }

    func reconciliationItems() -> NegentropySortedItems { honest.reconciliationItems() }
    func records(_ ids: [Digest32]) -> [[UInt8]] {
        honest.records(ids).map { bytes in
            var bytes = bytes
            bytes[bytes.count - 1] ^= 0x01
            return bytes
        }
    }
    func summary() -> (count: UInt64, fingerprint: [UInt8]) { honest.summary() }
}

/// A listener that answers whatever it reads with a Noise frame too short to be a handshake
/// message, and counts the connections it accepted.
final class GarbagePeer: @unchecked Sendable {
    private let queue = DispatchQueue(label: "garbage-peer")
    private let listener: TCPListener
    private var accepted: [TCPConnection] = []

    var address: SocketAddress { listener.localAddress }
    var connections: Int { queue.sync { accepted.count } }

    init() throws {
        listener = try TCPListener(bind: try SocketAddress(host: "127.0.0.1", port: 0), queue: queue)
        queue.sync {
            listener.start { [self] connection in
                accepted.append(connection)
                connection.start(onRead: { _ in connection.write([0x00, 0x03, 1, 2, 3]) }, onClose: { _ in })
            }
        }
    }

    func stop() {
        queue.sync {
            listener.close()
            for connection in accepted { connection.close() }
        }
    }
}

/// A client that connects and sends a malformed first handshake message.
final class GarbageClient: @unchecked Sendable {
    private let queue = DispatchQueue(label: "garbage-client")
    private var connection: TCPConnection?
    private var isClosed = false

    var closed: Bool { queue.sync { isClosed } }
    let localAddress: SocketAddress

    init(to address: SocketAddress) throws {
        let connection = try TCPConnection.connected(to: address, queue: queue)
        localAddress = connection.localAddress
        queue.sync {
            self.connection = connection
            connection.start(onRead: { _ in }, onClose: { [self] _ in isClosed = true })
            connection.write([0x00, 0x03, 1, 2, 3])
        }
    }
}

final class UncheckedBox<Value>: @unchecked Sendable {
    var value: Value
    init(_ value: Value) { self.value = value }
}

extension TCPConnection {
    /// A connection to `address` whose callbacks run on `queue`, for clients that tests drive by
    /// hand; waits for the connect (at most 5 s).
    static func connected(to address: SocketAddress, queue: DispatchQueue) throws -> TCPConnection {
        let done = DispatchSemaphore(value: 0)
        let result = UncheckedBox<Result<TCPConnection, SocketError>?>(nil)
        TCPConnection.connect(to: address, queue: queue, timeout: .seconds(5)) { outcome in
            result.value = outcome
            done.signal()
        }
        done.wait()
        return try #require(result.value).get()
    }
}

@Suite("Ban list")
struct BanListTests {
    @Test("endpoint bans stay within their cap under a flood of new source ports; the newest holds")
    func endpointCap() throws {
        var bans = BanList()
        for i in 0..<(BanList.maxEndpoints + 500) {
            let endpoint = try SocketAddress(host: "127.0.0.\(1 + i / 60_000)", port: UInt16(1024 + i % 60_000))
            bans.ban(endpoint, until: 100 + Double(i), now: 1)
            #expect(bans.endpointCount <= BanList.maxEndpoints)
        }
        let newest = try SocketAddress(host: "127.0.0.1", port: UInt16(1024 + BanList.maxEndpoints + 499))
        #expect(bans.contains(newest, now: 2))
        #expect(!bans.contains(try SocketAddress(host: "127.0.0.1", port: 1024), now: 2), "the ban ending soonest made room")
    }
}
