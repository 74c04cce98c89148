import Crypto
import Dispatch
import Foundation
import Glibc
@testable import LocalAPI
@testable import Node
import Store
import Sync
import Testing
import Transport
import Tree
import Wire

/// A node with its local API, on loopback, discovering its peers by beacons on a port of the
/// test's own; its data directory outlives it, so a test can start it again.
final class LiveNode: @unchecked Sendable {
    let directory: String
    let identity: PrivateKey
    let node: Node
    let api: APIServer

    init(directory: String, identity: PrivateKey, discoveryPort: UInt16, beaconInterval: Double = 0.5,
         _ configure: (inout NodeConfig) -> Void = { _ in }) throws {
        self.directory = directory
        self.identity = identity
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        var config = NodeConfig(listen: try SocketAddress(host: "127.0.0.1", port: 0))
        config.discovery = true
        config.discoveryInterfaces = ["lo"]
        config.discoveryPort = discoveryPort
        config.beaconInterval = .milliseconds(Int(beaconInterval * 1000))
        config.liveLimits.ratePerSecond = 1000  // the latency test flips faster than a person types
        config.liveLimits.burst = 1000
        configure(&config)
        node = try Node(store: try Store(path: directory + "/store.sqlite"), identity: identity, network: .named("live-tests"),
                        config: config)
        try node.start()
        api = try APIServer(node: node, address: try SocketAddress(host: "127.0.0.1", port: 0), token: APIFixture.token)
        let api = api
        node.queue.sync { api.start() }
    }

    var userID: String { identity.publicKey.userID }

    func stop() {
        let api = api
        node.queue.sync { api.close() }
        node.stop()
    }

    func call(_ method: String, _ target: String, body: String? = nil) throws -> HTTPReply {
        let client = try RawClient(port: api.address.port)
        defer { client.close() }
        try client.send(RawClient.request(method, target, body: body))
        return try client.readResponse()
    }

    func get(_ target: String) throws -> JSONValue? { try call("GET", target).json }

    var records: Int { node.status().records }

    /// Whether this node has heard `other` (so values from it are taken).
    func hears(_ other: LiveNode) -> Bool { node.status().peers.contains { $0.userID == other.userID } }
}

/// Polls `condition` every `step` seconds until it holds or `seconds` pass.
func eventually(_ seconds: Double, step: Double = 0.005, _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if try condition() { return true }
        usleep(UInt32(step * 1e6))
    }
    return try condition()
}

func temporaryDirectory(_ name: String) -> String {
    FileManager.default.temporaryDirectory.appendingPathComponent("lanchat-\(name)-\(UUID().uuidString)").path
}

func freeUDPPort() throws -> UInt16 {
    let queue = DispatchQueue(label: "free-port")
    let socket = try UDPSocket(bind: try SocketAddress(host: "127.0.0.1", port: 0), queue: queue)
    let port = socket.localAddress.port
    queue.sync { socket.close() }
    return port
}

/// Live state between real nodes on loopback (Protocol.md §5.7): typing flags that travel at
/// once, cost no record and vanish with their node; who may write them; presence; read receipts
/// that converge across nodes and restarts.
@Suite("Live state between nodes", .serialized)
struct LiveStateTests {
    static func pair(beaconInterval: Double = 0.5, _ configure: (inout NodeConfig) -> Void = { _ in }) throws -> (LiveNode, LiveNode) {
        let port = try freeUDPPort()
        let a = try LiveNode(directory: temporaryDirectory("live-a"), identity: PrivateKey(), discoveryPort: port,
                             beaconInterval: beaconInterval, configure)
        let b = try LiveNode(directory: temporaryDirectory("live-b"), identity: PrivateKey(), discoveryPort: port,
                             beaconInterval: beaconInterval, configure)
        #expect(eventually(10) { a.hears(b) && b.hears(a) })
        return (a, b)
    }

    @Test("a typing flag set on A shows on B within 100 ms (p99 of 200 flips) and adds no record")
    func typingLatency() throws {
        let (a, b) = try Self.pair()
        defer { a.stop(); b.stop() }
        let path = "/conversations/general/typingIndicator/\(a.userID)"
        let recordsBefore = (a.records, b.records)
        var latencies = [Double]()
        for flip in 0..<200 {
            let typing = flip % 2 == 0
            let start = Date()
            let reply = try a.call("PUT", path + ".json", body: typing ? "true" : "null")
            #expect(reply.status == 200)
            let expected: JSONValue = typing ? .bool(true) : .null
            let seen = try eventually(2, step: 0.001) { try b.node.queue.sync { () throws -> JSONValue in
                try b.node.valueWithLiveOnQueue(.null, at: Path(path))
            } == expected }
            #expect(seen)
            latencies.append(Date().timeIntervalSince(start))
        }
        latencies.sort()
        let p99 = latencies[Int(Double(latencies.count) * 0.99) - 1]
        #expect(p99 < 0.1, "p99 \(p99 * 1000) ms, median \(latencies[latencies.count / 2] * 1000) ms")
        // The flag is in B's tree and its stream readers' views, and in no record.
        _ = try a.call("PUT", path + ".json", body: "true")
        #expect(try eventually(2) { try b.get("/conversations/general.json") == .object(["typingIndicator": .object([a.userID: .bool(true)])]) })
        #expect(a.records == recordsBefore.0 && b.records == recordsBefore.1)
    }

    @Test("a typing flag vanishes on B when A clears it, stops, or is lost (3 beacon intervals)")
    func typingVanishes() throws {
        let (a, b) = try Self.pair()
        defer { b.stop(); let api = a.api; a.node.queue.sync { api.close() } }
        let path = "/conversations/general/typingIndicator/\(a.userID)"
        _ = try a.call("PUT", path + ".json", body: "true")
        #expect(try eventually(2) { try b.get(path + ".json") == .bool(true) })
        _ = try a.call("DELETE", path + ".json")
        #expect(try eventually(2) { try b.get(path + ".json") == .null })
        _ = try a.call("PUT", path + ".json", body: "true")
        #expect(try eventually(2) { try b.get(path + ".json") == .bool(true) })
        // A lost without a word: its beacons stop, nothing clears the flag, B expires it.
        let lostAt = Date()
        a.node.queue.sync {
            a.node.running = false
            for timer in a.node.timers { timer.cancel() }
            a.node.timers.removeAll()
            for slot in a.node.sessions.values { slot.connection.close() }
            a.node.sessions.removeAll()
            a.node.beacons?.close()
            a.node.sessionSocket?.close()
            a.node.listener?.close()
        }
        #expect(try eventually(5) { try b.get(path + ".json") == .null })
        let gone = Date().timeIntervalSince(lostAt)
        // Its last beacon came at most an instant before: gone at three intervals after it, and
        // within 0.1 s more for the timer's wake-up and this test's polling.
        #expect(gone <= 3 * 0.5 + 0.1, "gone after \(gone) s")
        #expect(try b.get("/presence/\(a.userID)/state.json") == .string("offline"))
    }

    @Test("typing relayed along a line A - C - B (discovery off): shown on B, renewed while A lives, gone within 3 intervals of the last renewal once A is lost")
    func typingRelayedAlongALine() throws {
        let interval = 0.5
        func lineNode(_ name: String, peer: LiveNode?) throws -> LiveNode {
            try LiveNode(directory: temporaryDirectory("line-\(name)"), identity: PrivateKey(), discoveryPort: try freeUDPPort(),
                         beaconInterval: interval) { config in
                config.discovery = false
                if let peer { config.manualPeers = [try! SocketAddress(host: "127.0.0.1", port: peer.node.listenAddress.port)] }
            }
        }
        let a = try lineNode("a", peer: nil)
        let c = try lineNode("c", peer: a)
        let b = try lineNode("b", peer: c)
        defer { b.stop(); c.stop(); let api = a.api; a.node.queue.sync { api.close() } }
        #expect(eventually(10) { c.hears(a) && c.hears(b) })
        #expect(!b.hears(a))
        let path = "/conversations/general/typingIndicator/\(a.userID)"
        #expect(try b.get("/presence/\(a.userID)/state.json") == .null)
        _ = try a.call("PUT", path + ".json", body: "true")
        #expect(try eventually(2) { try b.get(path + ".json") == .bool(true) })
        // Heard through C, A is online on B while its relayed values are held.
        #expect(try b.get("/presence/\(a.userID)/state.json") == .string("online"))
        // Renewed every interval: still shown after more than three intervals.
        let shownSince = Date()
        var held = true
        while Date().timeIntervalSince(shownSince) < 4 * interval {
            held = try held && b.get(path + ".json") == .bool(true)
            usleep(50_000)
        }
        #expect(held)
        // A lost without a word: its sessions drop, nothing clears the flag, C forgets it at once
        // and B lets it expire.
        let lostAt = Date()
        a.node.queue.sync {
            a.node.running = false
            for timer in a.node.timers { timer.cancel() }
            a.node.timers.removeAll()
            for slot in a.node.sessions.values { slot.connection.close() }
            a.node.sessions.removeAll()
            a.node.sessionSocket?.close()
            a.node.listener?.close()
        }
        #expect(try eventually(5) { try b.get(path + ".json") == .null })
        let gone = Date().timeIntervalSince(lostAt)
        // Its last renewal came at most an instant before: gone three intervals after it, and
        // within 0.1 s more for the timer's wake-up and this test's polling.
        #expect(gone <= 3 * interval + 0.1, "gone after \(gone) s")
        #expect(try b.get("/presence/\(a.userID)/state.json") == .string("offline"))
    }

    @Test("a member cannot set another user's typing flag: not through its API, not by a forged datagram")
    func othersFlag() throws {
        let (a, b) = try Self.pair()
        defer { a.stop(); b.stop() }
        let bPath = "/conversations/general/typingIndicator/\(b.userID)"
        #expect(try a.call("PUT", bPath + ".json", body: "true").status == 403)
        #expect(try a.call("PUT", "/presence/\(b.userID).json", body: "{\"state\":\"offline\"}").status == 403)
        // A signs a value for B's path itself and sends it as a sealed datagram to B: refused by
        // the path's owner rule. A value signed by a stranger for its own path is refused too:
        // its node is not live.
        let forged = try LiveValue.signed(by: a.identity, instance: a.node.instance, version: UInt64.max - 1, path: Path(bPath), value: .bool(true))
        let stranger = PrivateKey()
        let strangerPath = try Path("/conversations/general/typingIndicator/\(stranger.publicKey.userID)")
        let strangers = try LiveValue.signed(by: stranger, instance: [1, 2, 3, 4, 5, 6, 7, 8], version: 1, path: strangerPath, value: .bool(true))
        // A value with A's path, but its signature made over other bytes: refused as unsigned.
        var tampered = try LiveValue.signed(by: a.identity, instance: a.node.instance, version: UInt64.max - 2,
                                            path: Path("/conversations/general/typingIndicator/\(a.userID)"), value: .bool(false)).encoded()
        tampered[tampered.count - 70] ^= 1
        let queue = DispatchQueue(label: "forger")
        let socket = try UDPSocket(bind: try SocketAddress(host: "127.0.0.1", port: 0), queue: queue)
        for bytes in [forged.encoded(), strangers.encoded(), tampered] {
            try queue.sync { try socket.send(Datagram.live(bytes).seal(key: NetworkKey.named("live-tests").datagramKey), to: b.node.listenAddress) }
        }
        queue.sync { socket.close() }
        // Something B does take, sent after them, shows they were handled.
        _ = try a.call("PUT", "/conversations/general/typingIndicator/\(a.userID).json", body: "\"marker\"")
        #expect(try eventually(2) { try b.get("/conversations/general/typingIndicator/\(a.userID).json") == .string("marker") })
        #expect(try b.get("/conversations/general/typingIndicator.json") == .object([a.userID: .string("marker")]))
        #expect(b.node.queue.sync { b.node.liveCountsOnQueue().values } == 1)
    }

    @Test("presence: online, away after the idle time, offline with a last seen that survives a restart")
    func presence() throws {
        let port = try freeUDPPort()
        let a = try LiveNode(directory: temporaryDirectory("presence-a"), identity: PrivateKey(), discoveryPort: port) { $0.awayAfterSeconds = 1 }
        let bKey = PrivateKey(), bDir = temporaryDirectory("presence-b")
        var b = try LiveNode(directory: bDir, identity: bKey, discoveryPort: port)
        defer { b.stop() }
        #expect(eventually(10) { a.hears(b) && b.hears(a) })
        let state = "/presence/\(a.userID)/state.json"
        #expect(try b.get(state) == .string("online"))
        var shown: JSONValue?
        // A's API unused for a second (the deadline bounds the wait: loaded machines delay beats).
        #expect(try eventually(10) { shown = try b.get(state); return shown == .string("away") },
                "B shows \(String(describing: shown)); B hears A: \(b.hears(a)); A's own: \(String(describing: try? a.get(state)))")
        _ = try a.call("GET", "/.lanchat/status")
        #expect(try eventually(2) { try b.get(state) == .string("online") })
        a.stop()  // a stop clears A's values at once; its beacons end
        #expect(try eventually(5) { try b.get(state) == .string("offline") })
        guard case let .number(seen)? = try b.get("/presence/\(a.userID)/lastSeen.json") else {
            Issue.record("no last seen")
            return
        }
        #expect(abs(seen - Date().timeIntervalSince1970 * 1000) < 10_000)
        b.stop()
        b = try LiveNode(directory: bDir, identity: bKey, discoveryPort: try freeUDPPort())
        #expect(try b.get("/presence/\(a.userID).json") == .object(["state": "offline", "lastSeen": .number(seen)]))
    }

    @Test("read receipts converge on three nodes, through restarts, one per user and conversation")
    func receiptsConverge() throws {
        let port = try freeUDPPort()
        let keys = [PrivateKey(), PrivateKey(), PrivateKey()]
        let dirs = (0..<3).map { temporaryDirectory("receipts-\($0)") }
        var nodes = try (0..<2).map { try LiveNode(directory: dirs[$0], identity: keys[$0], discoveryPort: port) }
        defer { for n in nodes { n.stop() } }
        #expect(eventually(10) { nodes[0].hears(nodes[1]) && nodes[1].hears(nodes[0]) })
        let receipts = "/conversations/general/readReceipts"
        for (i, key) in ["-Oa0001", "-Oa0002", "-Oa0003"].enumerated() {
            #expect(try nodes[i % 2].call("PUT", "\(receipts)/\(nodes[i % 2].userID).json", body: "\"\(key)\"").status == 200)
        }
        let want: JSONValue = .object([nodes[0].userID: "-Oa0003", nodes[1].userID: "-Oa0002"])
        #expect(try eventually(5) { try nodes[0].get(receipts + ".json") == want && nodes[1].get(receipts + ".json") == want })
        // Node 0 stops; node 2 starts and meets only node 1, which hands it node 0's receipt.
        nodes[0].stop()
        nodes[0] = try LiveNode(directory: dirs[2], identity: keys[2], discoveryPort: port)  // [2, 1]
        #expect(try eventually(10) { try nodes[0].get(receipts + ".json") == want })
        // Node 1 restarts alone: its receipts were kept.
        nodes[1].stop()
        nodes[1] = try LiveNode(directory: dirs[1], identity: keys[1], discoveryPort: try freeUDPPort())
        #expect(try nodes[1].get(receipts + ".json") == want)
        // Node 1 back with the others, node 0 back: a new receipt of node 0 reaches all three.
        nodes[1].stop()
        nodes[1] = try LiveNode(directory: dirs[1], identity: keys[1], discoveryPort: port)
        nodes.append(try LiveNode(directory: dirs[0], identity: keys[0], discoveryPort: port))  // [2, 1, 0]
        #expect(eventually(10) { nodes[2].hears(nodes[0]) && nodes[2].hears(nodes[1]) })
        #expect(try nodes[0].call("PUT", "\(receipts)/\(keys[0].publicKey.userID).json", body: "\"-Oa0009\"").status == 403)
        #expect(try nodes[2].call("PUT", "\(receipts)/\(keys[0].publicKey.userID).json", body: "\"-Oa0009\"").status == 200)
        let later: JSONValue = .object([keys[0].publicKey.userID: "-Oa0009", keys[1].publicKey.userID: "-Oa0002"])
        #expect(try eventually(10) { try nodes.allSatisfy { try $0.get(receipts + ".json") == later } })
        #expect(nodes.allSatisfy { $0.records == 0 })  // no record anywhere
        #expect(nodes.allSatisfy { n in n.node.queue.sync { n.node.liveCountsOnQueue().receipts } == 2 })
    }

    @Test("a live write through the API: sizes, count, rate, and whose paths")
    func liveWriteLimits() throws {
        let fixture = try APIFixture()
        defer { fixture.shutdown() }
        let me = fixture.node.userID
        let base = "/status/\(me)/"
        let longest = base + String(repeating: "p", count: 512 - base.utf8.count)
        #expect(try fixture.call("PUT", longest + ".json", body: "1").status == 200)
        #expect(try fixture.call("PUT", longest + "q.json", body: "1").status == 400)
        let value = "\"" + String(repeating: "v", count: 510) + "\""
        #expect(try fixture.call("PUT", base + "a.json", body: value).status == 200)
        #expect(try fixture.call("PUT", base + "a.json", body: "\"" + String(repeating: "v", count: 511) + "\"").status == 400)
        for i in 2..<32 { #expect(try fixture.call("PUT", "/conversations/c\(i)/typingIndicator/\(me).json", body: "true").status == 200) }
        #expect(try fixture.call("PUT", "/conversations/c32/typingIndicator/\(me).json", body: "true").status == 400)
        #expect(try fixture.call("PUT", "/conversations/c2/typingIndicator/\(PrivateKey().publicKey.userID).json", body: "true").status == 403)
        #expect(try fixture.call("PUT", "/presence/\(me).json", body: "{}").status == 403)
        // 34 taken so far; the bucket holds 40 and refills at 20 a second: well within a second,
        // a burst of more runs into 429.
        var statuses = [Int]()
        for _ in 0..<30 { statuses.append(try fixture.call("DELETE", "/conversations/c2/typingIndicator/\(me).json").status) }
        #expect(statuses.contains(429) && statuses.first == 200)
        #expect(fixture.node.status().records == 0)
    }

    @Test("the node's time for API clients")
    func time() throws {
        let fixture = try APIFixture()
        defer { fixture.shutdown() }
        let now = Date().timeIntervalSince1970 * 1000
        guard case let .number(offset)? = try fixture.call("GET", "/.info/serverTimeOffset.json?t=\(Int64(now) - 5000)").json else {
            Issue.record("no offset")
            return
        }
        #expect(offset >= 5000 && offset < 7000)
        guard case let .object(time)? = try fixture.call("GET", "/.lanchat/time").json, case let .number(wall)? = time["wall"],
              case let .number(nodeNow)? = time["now"] else {
            Issue.record("no time")
            return
        }
        #expect(nodeNow >= wall && abs(wall - now) < 5000)
        #expect(try fixture.call("GET", "/.info/serverTimeOffset.json?t=soon").status == 400)
    }
}
