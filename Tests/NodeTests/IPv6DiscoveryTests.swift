import TestSupport
import Crypto
import Dispatch
import Foundation
@testable import Node
import Store
import Testing
import Tree
import Transport

/// The IPv6 half of discovery that runs without root: which address a peer heard over both
/// families keeps, and a node told `0.0.0.0` taking sessions on `[::]` too. Beacons over IPv6
/// link-local multicast between hosts are Tools/netns-ipv6.sh's.
@Suite("IPv6 discovery and sessions", .serialized)
struct IPv6DiscoveryTests {
    static let v4 = try! SocketAddress(host: "10.0.0.2", port: 7000)
    static let v6 = try! SocketAddress(host: "fe80::2%3", port: 7000)

    static func peer(at address: SocketAddress, seen: Double, instance: [UInt8] = [1]) -> DiscoveredPeer {
        DiscoveredPeer(author: PrivateKey().publicKey, instance: instance, address: address, lastSeen: seen,
                       recordCount: 0, fingerprint: [], addressSeen: seen)
    }

    @Test("a peer heard over both families keeps its IPv4 address; IPv6 when that is all")
    func addressPreference() {
        let address = DiscoveredPeer.address(known:heard:instance:now:freshFor:)
        // New peer: whatever was heard, with the IPv6 scope kept.
        #expect(address(nil, Self.v6, [1], 10, 6) == Self.v6)
        #expect(address(nil, Self.v6, [1], 10, 6).scopeID == 3)
        // Heard over IPv4 recently: an IPv6 beacon does not move it.
        #expect(address(Self.peer(at: Self.v4, seen: 9), Self.v6, [1], 10, 6) == Self.v4)
        // IPv4 gone quiet for longer than `freshFor`: IPv6 takes over.
        #expect(address(Self.peer(at: Self.v4, seen: 1), Self.v6, [1], 10, 6) == Self.v6)
        // On IPv6, an IPv4 beacon moves it back to IPv4 at once.
        #expect(address(Self.peer(at: Self.v6, seen: 9), Self.v4, [1], 10, 6) == Self.v4)
        // A restart (new instance) may have a new port: the heard address wins.
        #expect(address(Self.peer(at: Self.v4, seen: 9), Self.v6, [2], 10, 6) == Self.v6)
    }

    @Test("a node listening on 0.0.0.0 also takes sessions on [::] at the same port")
    func wildcardListenAlsoServesIPv6() throws {
        let queue = DispatchQueue(label: "ipv6-probe")
        do {
            let probe = try UDPSocket(bind: try SocketAddress(host: "::1", port: 0), queue: queue)
            queue.sync { probe.close() }
        } catch {
            environmentLimit("IPv6 unavailable on loopback: \(error)")
            return
        }
        let dirA = try CorruptChunkTests.tempDirectory(), dirB = try CorruptChunkTests.tempDirectory()
        defer { try? FileManager.default.removeItem(atPath: dirA); try? FileManager.default.removeItem(atPath: dirB) }
        let logA = LogLines(), logB = LogLines()
        var configA = NodeConfig(listen: try SocketAddress(host: "0.0.0.0", port: 0))
        configA.discovery = false
        configA.log = { logA.append($0) }
        let a = try Node(store: try Store(path: dirA + "/store.sqlite"), identity: PrivateKey(),
                         network: CorruptChunkTests.network, config: configA)
        try a.start()
        defer { a.stop() }
        #expect(a.queue.sync { a.listenerIPv6?.localAddress.port } == a.listenAddress.port, "log: \(logA.lines)")

        // B (on the same network key, from CorruptChunkTests's helper) dials A at [::1].
        let b = try CorruptChunkTests.node(dirB, peers: [try SocketAddress(host: "::1", port: a.listenAddress.port)], log: logB)
        try b.start()
        defer { b.stop() }
        _ = try a.write { store, key in
            try store.set(try Path("/greeting"), to: JSONValue.string("over IPv6"), signer: key, nowMillis: wallMillis())
        }
        #expect(try CorruptChunkTests.eventually(20) { try b.read { try $0.value(at: try Path("/greeting")) } == JSONValue.string("over IPv6") },
                "log A: \(logA.lines)\nlog B: \(logB.lines)")
        #expect(logB.lines.contains { $0.contains("connected to") && $0.contains("[::1]:\(a.listenAddress.port)") }, "log: \(logB.lines)")
    }
}
