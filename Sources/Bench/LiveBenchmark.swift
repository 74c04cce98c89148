import Crypto
import Dispatch
import Foundation
import Node
import Store
import Sync
import Transport
import Tree
import Wire

/// Live state's figures: how long a typing flag set on node A takes to show on node B (median
/// and p99), beside the ceiling of a raw UDP datagram between two loopback sockets measured in
/// the same run; and what a typing user costs the LAN, in bytes a second per peer.
enum LiveBenchmark {
    static func log(_ text: String) { FileHandle.standardError.write(Data("live: \(text)\n".utf8)) }

    static func run(_ options: BenchOptions) throws -> BenchSection {
        let flips = options.quick ? 100 : 1_000
        let ceiling = try udpOneWay(count: flips)
        let port = try freeUDPPort()
        let a = try node(port), b = try node(port)
        defer { a.node.stop(); b.node.stop() }
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline, !(a.node.status().peers.contains { $0.userID == b.node.userID } && b.node.status().peers.contains { $0.userID == a.node.userID }) {
            usleep(10_000)
        }
        let path = try Path(segments: ["conversations", "general", "typingIndicator", a.node.userID])
        let seen = DispatchSemaphore(value: 0)
        let token = b.node.addLiveObserver { paths, _ in if paths.contains(path) { seen.signal() } }
        defer { b.node.removeLiveObserver(token) }
        log("\(flips) typing flips A -> B")
        var latencies = [Double]()
        for flip in 0..<flips {
            let value: JSONValue = flip % 2 == 0 ? .bool(true) : .null
            let start = DispatchTime.now().uptimeNanoseconds
            try a.node.queue.sync { try a.node.setLive(path, to: value) }
            guard seen.wait(timeout: .now() + 2) == .success else { throw BenchError("flip \(flip) never showed on B") }
            latencies.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6)
        }
        latencies.sort()
        let p50 = latencies[latencies.count / 2], p99 = latencies[Int(Double(latencies.count) * 0.99) - 1]
        let records = (a.node.status().records, b.node.status().records)
        // A typing user, as the web chat writes it: `true` on the first keystroke, again every
        // 3 s while typing, cleared 4 s after the last. Each is one datagram to each live peer
        // (plus IPv4 and UDP headers); a session, if open, carries the same value once more.
        let signed = try LiveValue.signed(by: PrivateKey(), instance: Array(repeating: 0, count: 8), version: UInt64(Date().timeIntervalSince1970 * 1000) << 10,
                                          path: path, value: .bool(true))
        let datagram = Datagram.live(signed.encoded()).seal(key: NetworkKey.named("bench").datagramKey).count + 28
        let perPeer = Double(datagram) / 3
        let floodPerPeer = Double(datagram) * 20
        let beacon = Datagram.beacon(Beacon(author: PrivateKey().publicKey, instance: Array(repeating: 0, count: 8), port: 7000,
                                            recordCount: 1_000_000, fingerprint: Array(repeating: 0, count: 16)))
            .seal(key: NetworkKey.named("bench").datagramKey).count + 28
        let beaconRate = Double(beacon) / 2
        return BenchSection(name: "live", lines: [
            "## Live state", "",
            "Run \(ISO8601DateFormatter().string(from: Date())), \(ProcessInfo.processInfo.activeProcessorCount) cores (shared), a \(buildMode) build.",
            "Two nodes on loopback that found each other by beacons; A sets and clears its typing flag \(flips) times through",
            "the node (`setLive`, what the local API's PUT does), each time waiting until B's tree shows it.", "",
            "| figure | value | ceiling (same run) | ratio |",
            "|---|---|---|---|",
            String(format: "| typing flag A -> B, median | %.3f ms | raw UDP datagram one way on loopback, median %.3f ms | %.1fx |", p50, ceiling.median, p50 / ceiling.median),
            String(format: "| typing flag A -> B, p99 | %.3f ms | raw UDP datagram one way, p99 %.3f ms | %.1fx |", p99, ceiling.p99, p99 / ceiling.p99),
            "| records written by the \(flips) flips | \(records.0) on A, \(records.1) on B | 0 | - |",
            String(format: "| a user typing (web chat: a datagram every 3 s) | %.0f bytes/s per live peer (%d-byte datagrams) | a node's own beacons: %.0f bytes/s | %.2fx |",
                   perPeer, datagram, beaconRate, perPeer / beaconRate),
            String(format: "| a member flipping at the rate limit (20 a second) | %.0f bytes/s per live peer | - | - |", floodPerPeer),
            "",
            "The latency counts signing, sealing, one datagram, opening, verifying (Ed25519) and the tree update on B's queue;",
            "the ceiling is a bare datagram between two sockets on the same machine, half a round trip.",
        ])
    }

    #if DEBUG
    static let buildMode = "debug"
    #else
    static let buildMode = "release"
    #endif

    struct Ceiling { let median: Double; let p99: Double }

    /// Half the round trip of a datagram between two loopback sockets, `count` times.
    static func udpOneWay(count: Int) throws -> Ceiling {
        let queueA = DispatchQueue(label: "udp-a"), queueB = DispatchQueue(label: "udp-b")
        let a = try UDPSocket(bind: try SocketAddress(host: "127.0.0.1", port: 0), queue: queueA)
        let b = try UDPSocket(bind: try SocketAddress(host: "127.0.0.1", port: 0), queue: queueB)
        let back = DispatchSemaphore(value: 0)
        let addressA = a.localAddress, addressB = b.localAddress
        queueB.sync { b.start { bytes, _ in try? b.send(bytes, to: addressA) } }
        queueA.sync { a.start { _, _ in back.signal() } }
        let payload = [UInt8](repeating: 7, count: 253)
        var times = [Double]()
        for _ in 0..<count {
            let start = DispatchTime.now().uptimeNanoseconds
            try queueA.sync { try a.send(payload, to: addressB) }
            guard back.wait(timeout: .now() + 2) == .success else { throw BenchError("a loopback datagram was lost") }
            times.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 2e6)
        }
        queueA.sync { a.close() }
        queueB.sync { b.close() }
        times.sort()
        return Ceiling(median: times[times.count / 2], p99: times[Int(Double(times.count) * 0.99) - 1])
    }

    final class Running {
        let node: Node
        init(node: Node) { self.node = node }
    }

    static func node(_ discoveryPort: UInt16) throws -> Running {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("lanchat-live-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        var config = NodeConfig(listen: try SocketAddress(host: "127.0.0.1", port: 0))
        config.discoveryInterfaces = ["lo"]
        config.discoveryPort = discoveryPort
        config.beaconInterval = .milliseconds(500)
        config.liveLimits.ratePerSecond = 100_000  // the benchmark flips far faster than anyone types
        config.liveLimits.burst = 100_000
        let node = try Node(store: try Store(path: dir + "/store.sqlite"), identity: PrivateKey(), network: .named("bench"), config: config)
        try node.start()
        return Running(node: node)
    }

    static func freeUDPPort() throws -> UInt16 {
        let queue = DispatchQueue(label: "free-port")
        let socket = try UDPSocket(bind: try SocketAddress(host: "127.0.0.1", port: 0), queue: queue)
        let port = socket.localAddress.port
        queue.sync { socket.close() }
        return port
    }
}
