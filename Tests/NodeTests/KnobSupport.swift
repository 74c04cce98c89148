import Crypto
import Dispatch
import Foundation
import Node
import Store
import Sync
import Testing
import Transport
import Wire

/// Nodes whose limits are turned down, so a test sees the behaviour at and past a limit of
/// Protocol.md §9 within a second or two instead of its default minutes.
enum Knobs {
    /// A node on loopback with discovery off (unless `configure` turns it on), dialling `peers`.
    static func node(_ dir: String, peers: [SocketAddress] = [], log: LogLines,
                     _ configure: (inout NodeConfig) -> Void = { _ in }) throws -> Node {
        var config = NodeConfig(listen: try SocketAddress(host: "127.0.0.1", port: 0))
        config.discovery = false
        config.manualPeers = peers
        config.log = { line in log.append(line) }
        configure(&config)
        return try Node(store: try Store(path: dir + "/store.sqlite"), identity: PrivateKey(),
                        network: CorruptChunkTests.network, config: config)
    }

    /// Fresh directories for a test, removed when `body` returns.
    static func withDirectories<T>(_ count: Int, _ body: ([String]) throws -> T) throws -> T {
        let dirs = try (0..<count).map { _ in try CorruptChunkTests.tempDirectory() }
        defer { for dir in dirs { try? FileManager.default.removeItem(atPath: dir) } }
        return try body(dirs)
    }

    /// A started node (see `node`) in a fresh directory, stopped and removed when `body` returns.
    static func withNode<T>(peers: [SocketAddress] = [], _ configure: (inout NodeConfig) -> Void = { _ in },
                            _ body: (Node, LogLines) throws -> T) throws -> T {
        try withDirectories(1) { dirs in
            let log = LogLines()
            let node = try node(dirs[0], peers: peers, log: log, configure)
            try node.start()
            defer { node.stop() }
            return try body(node, log)
        }
    }

    /// A UDP port free on loopback now, for a test's own discovery port: beacons of other tests
    /// (or of nodes running on this machine) on the default port are kept away.
    static func freeUDPPort() throws -> UInt16 {
        let queue = DispatchQueue(label: "free-port")
        let socket = try UDPSocket(bind: try SocketAddress(host: "127.0.0.1", port: 0), queue: queue)
        let port = socket.localAddress.port
        queue.sync { socket.close() }
        return port
    }

    /// Seconds since `start`.
    static func since(_ start: Date) -> Double { Date().timeIntervalSince(start) }
}

/// A client that connects to a node's session port and goes no further than `stage`: no bytes
/// at all, or a complete Noise handshake and then no `hello`. It notes when the node closes it.
final class StalledClient: @unchecked Sendable {
    enum Stage { case connected, handshaken }

    private let queue = DispatchQueue(label: "stalled-client")
    private var connection: TCPConnection?
    private var handshake: NoiseHandshake?
    private var buffer: [UInt8] = []
    private var closedAt: Date?
    private var handshakeDone = false

    /// When the node closed the connection, if it did.
    var closed: Date? { queue.sync { closedAt } }
    /// Whether the Noise handshake completed (stage `.handshaken`).
    var handshaken: Bool { queue.sync { handshakeDone } }
    let connectedAt: Date

    init(to address: SocketAddress, network: NetworkKey, stage: Stage) throws {
        let connection = try TCPConnection.connected(to: address, queue: queue)
        connectedAt = Date()
        try queue.sync {
            self.connection = connection
            if stage == .handshaken {
                var initiator = try NoiseHandshake(role: .initiator, localStatic: PrivateKey().x25519(),
                                                   psk: network.sessionPSK.copyBytes(), prologue: PeerSession.prologue)
                let first = try initiator.writeMessage(payload: [])
                handshake = initiator
                connection.write(Self.framed(first))
            }
            connection.start(onRead: { [self] bytes in read(bytes) }, onClose: { [self] _ in
                if closedAt == nil { closedAt = Date() }
            })
        }
    }

    /// The handshake's second message in, the third out; nothing after it.
    private func read(_ bytes: [UInt8]) {
        guard var initiator = handshake else { return }
        buffer += bytes
        guard buffer.count >= 2 else { return }
        let length = Int(buffer[0]) << 8 | Int(buffer[1])
        guard buffer.count >= 2 + length else { return }
        let message = Array(buffer[2..<(2 + length)])
        buffer.removeFirst(2 + length)
        handshake = nil
        guard (try? initiator.readMessage(message)) != nil, let third = try? initiator.writeMessage(payload: []) else { return }
        connection?.write(Self.framed(third))
        handshakeDone = initiator.isComplete
    }

    private static func framed(_ message: [UInt8]) -> [UInt8] {
        [UInt8(message.count >> 8), UInt8(message.count & 0xFF)] + message
    }

    func stop() { queue.sync { connection?.close() } }
}

/// A `RecordSource` over a store that notes when each reconcile message asked for its items:
/// the peer holding it answers one such call per reconcile message the node sends.
final class RoundCountingSource: RecordSource, ServedCount, @unchecked Sendable {
    let honest: HonestSource
    private let lock = NSLock()
    private var times: [Date] = []
    var served: Counter { honest.served }

    init(store: Store) { honest = HonestSource(store: store) }

    /// When each reconcile message was answered.
    var askedAt: [Date] { lock.lock(); defer { lock.unlock() }; return times }

    func reconciliationItems() -> NegentropySortedItems {
        lock.lock(); times.append(Date()); lock.unlock()
        return honest.reconciliationItems()
    }
    func records(_ ids: [Digest32]) -> [[UInt8]] { honest.records(ids) }
    func summary() -> (count: UInt64, fingerprint: [UInt8]) { honest.summary() }
    func chunk(_ hash: Digest32) -> [UInt8]? { honest.chunk(hash) }
}
