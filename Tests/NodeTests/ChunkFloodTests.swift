import Crypto
import Dispatch
import Foundation
@testable import Node
import Store
import Sync
import Testing
import Transport
import Wire

/// A node serves chunk requests a part at a time: a peer that asks for far more than it reads
/// is no longer read once 256 requests wait, and what is queued for it stays within one part.
@Suite("A peer that floods chunk requests", .serialized)
struct ChunkFloodTests {
    @Test("a flood is throttled, its answers never pile up, and every request is still answered once read")
    func floodThrottled() throws {
        let dir = try CorruptChunkTests.tempDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let node = try CorruptChunkTests.node(dir, peers: [], log: LogLines())
        try node.start()
        defer { node.stop() }
        let info = try node.write { store, key in
            try store.putFile("images/flood.jpg", bytes: CorruptChunkTests.imageBytes(chunks: 63), signer: key,
                              nowMillis: UInt64(Date().timeIntervalSince1970 * 1000))
        }
        #expect(info.manifest.chunks.count == 64)
        // 40 requests of the file's 64 chunks: 2,560 chunks, 160 MiB, sent at once, then not read.
        let flooder = Flooder(network: CorruptChunkTests.network, request: info.manifest.chunks, times: 40)
        flooder.connect(to: node.listenAddress)

        func servedSlot() -> (paused: Bool, queued: Int, pending: Int)? {
            node.queue.sync {
                node.sessions.values.first { $0.machine.chunksToServeCount > 0 }.map {
                    ($0.readPaused, $0.machine.chunksToServeCount, $0.connection.pendingWriteBytes)
                }
            }
        }
        #expect(CorruptChunkTests.eventually(20) { servedSlot()?.paused == true }, "the flooding peer is still read")
        // Past the limit by at most what one read of the socket held; the rest waits in TCP.
        let state = try #require(servedSlot())
        #expect(state.queued > Node.maxQueuedChunkRequests && state.queued <= Node.maxQueuedChunkRequests + 2_100)
        #expect(state.pending <= Node.chunkServePart + Store.chunkSize + 4096)

        flooder.resume()
        #expect(CorruptChunkTests.eventually(60) { flooder.received == 2_560 }, "received \(flooder.received) of 2560")
        #expect(flooder.closeReasons.isEmpty)
        #expect(node.queue.sync { node.sessions.values.allSatisfy { $0.machine.chunksToServeCount == 0 && !$0.readPaused } })
    }
}

/// A peer that, once its session is established, asks for `request` `times` over in one burst
/// and does not read until `resume`.
final class Flooder: @unchecked Sendable {
    private let queue = DispatchQueue(label: "flooder")
    private var machine: PeerSession
    private var connection: TCPConnection?
    private let request: [Digest32]
    private let times: Int
    private let source = CorruptSource(chunks: [:])
    private var chunks = 0
    private var reasons: [String] = []

    var received: Int { queue.sync { chunks } }
    var closeReasons: [String] { queue.sync { reasons } }

    init(network: NetworkKey, request: [Digest32], times: Int) {
        machine = PeerSession(role: .initiator, identity: PrivateKey(), instance: secureRandomBytes(Beacon.instanceByteCount), networkKey: network)
        self.request = request
        self.times = times
    }

    func connect(to address: SocketAddress) {
        TCPConnection.connect(to: address, queue: queue, timeout: .seconds(5)) { [self] result in
            guard case let .success(connection) = result else { reasons.append("could not connect"); return }
            self.connection = connection
            connection.start(onRead: { [self] bytes in perform(machine.receive(bytes, from: source)) },
                             onClose: { [self] _ in reasons.append("closed") })
            perform(machine.start())
        }
    }

    func resume() { queue.sync { connection?.resumeReading() } }

    private func perform(_ actions: [PeerSession.Action]) {
        for action in actions {
            switch action {
            case let .send(bytes):
                connection?.write(bytes)
            case .established:
                for _ in 0..<times { perform(machine.requestChunks(request)) }
                connection?.pauseReading()
            case .chunkReceived:
                chunks += 1
            case let .close(reason, _):
                reasons.append(reason)
            default:
                break
            }
        }
    }
}
