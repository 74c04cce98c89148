import Crypto
import Dispatch
import Foundation
@testable import Node
import Store
import Sync
import Testing
import Transport
import Tree
import Wire

/// The datagram limits of Protocol.md §9 with their knobs turned down, on loopback with a
/// discovery port of the test's own: the beacon interval and the peer expiry it implies, and
/// the size up to which a node's own records also go out as datagrams.
@Suite("Discovery limits, knobs turned down", .serialized)
struct DiscoveryKnobTests {
    /// A hand-held member on loopback: hears the beacon group on `discoveryPort`, sends beacons
    /// of its own there, and has a session port (UDP) where pushed records arrive.
    final class FakeMember: @unchecked Sendable {
        let queue = DispatchQueue(label: "fake-member")
        let identity = PrivateKey()
        let instance = secureRandomBytes(Beacon.instanceByteCount)
        let key = CorruptChunkTests.network.datagramKey
        let discoveryPort: UInt16
        private let listener: UDPSocket
        private let session: UDPSocket
        private var beacons: [PublicKey: [Date]] = [:]
        private var pushed: [Record] = []

        init(discoveryPort: UInt16) throws {
            self.discoveryPort = discoveryPort
            listener = try UDPSocket(bind: try SocketAddress(host: "0.0.0.0", port: discoveryPort), queue: queue,
                                     reuseAddress: true, reusePort: true)
            session = try UDPSocket(bind: try SocketAddress(host: "127.0.0.1", port: 0), queue: queue)
            let loopback = try SocketAddress(host: "127.0.0.1", port: 0), group = try Self.group(discoveryPort)
            try queue.sync {
                try listener.joinMulticast(group: group, interfaceAddress: loopback)
                try listener.setMulticastInterface(loopback)
                listener.start { [self] bytes, _ in
                    if case let .beacon(beacon)? = Datagram.open(bytes, key: key) { beacons[beacon.author, default: []].append(Date()) }
                }
                session.start { [self] bytes, _ in
                    if case let .push(encoding)? = Datagram.open(bytes, key: key), let record = try? Record.decode(encoding) {
                        pushed.append(record)
                    }
                }
            }
        }

        static func group(_ port: UInt16) throws -> SocketAddress { try SocketAddress(host: "239.255.77.77", port: port) }

        /// When each beacon of `author` was heard.
        func beaconTimes(of author: PublicKey) -> [Date] { queue.sync { beacons[author] ?? [] } }
        /// The records pushed to this member's session port, in arrival order.
        var pushedRecords: [Record] { queue.sync { pushed } }

        /// Announces this member, in sync with a node holding `count` records of `fingerprint`
        /// (so the node does not dial it).
        func beacon(count: UInt64, fingerprint: [UInt8]) throws {
            let beacon = Beacon(author: identity.publicKey, instance: instance, port: session.localAddress.port,
                                recordCount: count, fingerprint: fingerprint)
            let datagram = Datagram.beacon(beacon).seal(key: key), group = try Self.group(discoveryPort)
            try queue.sync { try listener.send(datagram, to: group) }
        }

        func stop() { queue.sync { listener.close(); session.close() } }
    }

    static func discoveringNode(_ dir: String, port: UInt16, log: LogLines, _ configure: (inout NodeConfig) -> Void) throws -> Node {
        try Knobs.node(dir, log: log) { config in
            config.discovery = true
            config.discoveryInterfaces = ["lo"]
            config.discoveryPort = port
            configure(&config)
        }
    }

    @Test("beacons go out every beaconInterval; a peer beaconing at that pace stays, one silent for three intervals is lost")
    func beaconIntervalAndExpiry() throws {
        let port = try Knobs.freeUDPPort()
        let member = try FakeMember(discoveryPort: port)
        defer { member.stop() }
        let dir = try CorruptChunkTests.tempDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let log = LogLines()
        let interval = 0.25
        let node = try Self.discoveringNode(dir, port: port, log: log) { config in
            config.beaconInterval = .milliseconds(Int(interval * 1000))
            config.antiEntropyInterval = .milliseconds(50)  // peers are expired on this tick
        }
        try node.start()
        defer { node.stop() }

        // The node's own beacons, at its interval (the first at once on start).
        #expect(CorruptChunkTests.eventually(10) { member.beaconTimes(of: node.identity.publicKey).count >= 6 })
        let times = Array(member.beaconTimes(of: node.identity.publicKey).prefix(6))
        let mean = times.last!.timeIntervalSince(times.first!) / Double(times.count - 1)
        #expect(mean > interval * 0.7 && mean < interval * 2, "beacons every \(mean) s, the interval is \(interval) s")

        // The member beacons every interval for eight intervals: it stays discovered throughout.
        let (count, fingerprint) = node.queue.sync { (UInt64(node.recordSet.count), node.recordSet.fingerprint) }
        let sent = Counter()
        let lastSent = UncheckedBox(Date())
        let pace = DispatchQueue(label: "member-beacons")
        let timer = RepeatingTimer(interval: .milliseconds(Int(interval * 1000)), initialDelay: .milliseconds(0), queue: pace) {
            guard sent.value < 8 else { return }
            try? member.beacon(count: count, fingerprint: fingerprint)
            lastSent.value = Date()
            sent.value += 1
        }
        defer { timer.cancel() }
        func known() -> Bool { node.queue.sync { node.discovered[member.identity.publicKey] != nil } }
        #expect(CorruptChunkTests.eventually(10) { known() }, "log: \(log.lines)")
        var seenThroughout = true
        #expect(CorruptChunkTests.eventually(10) {
            seenThroughout = seenThroughout && known()
            return pace.sync { sent.value } == 8
        })
        #expect(seenThroughout, "lost while beaconing: \(log.lines)")
        let shortID = String(member.identity.publicKey.userID.prefix(8))
        #expect(!log.lines.contains { $0.hasPrefix("lost \(shortID)") }, "log: \(log.lines)")

        // Silent: lost once three intervals have passed without a beacon, not before.
        #expect(CorruptChunkTests.eventually(10) { !known() }, "log: \(log.lines)")
        let silentFor = Date().timeIntervalSince(pace.sync { lastSent.value })
        #expect(silentFor >= 3 * interval, "lost after \(silentFor) s of silence, expiry is \(3 * interval) s")
        #expect(log.lines.contains("lost \(shortID): no beacon for 0.75 s"), "log: \(log.lines)")
    }

    @Test("a node's own record of datagramRecordBytes is pushed by datagram to live peers; one byte more is not")
    func datagramRecordSize() throws {
        // A record's size grows one byte per byte of a string value of 24 to 255 bytes.
        let probeKey = PrivateKey()
        let probe = try Store(path: ":memory:")
        func size(_ length: Int) throws -> Int {
            try probe.set(try Path("/d/x"), to: .string(String(repeating: "a", count: length)), signer: probeKey,
                          nowMillis: SessionKnobTests.now()).encoded.count
        }
        let limit = try size(200)
        #expect(try size(201) == limit + 1)

        let port = try Knobs.freeUDPPort()
        let member = try FakeMember(discoveryPort: port)
        defer { member.stop() }
        let dir = try CorruptChunkTests.tempDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let log = LogLines()
        let node = try Self.discoveringNode(dir, port: port, log: log) { $0.datagramRecordBytes = limit }
        try node.start()
        defer { node.stop() }
        let (count, fingerprint) = node.queue.sync { (UInt64(node.recordSet.count), node.recordSet.fingerprint) }
        #expect(CorruptChunkTests.eventually(10) {
            try? member.beacon(count: count, fingerprint: fingerprint)
            return node.queue.sync { node.discovered[member.identity.publicKey] != nil }
        }, "log: \(log.lines)")

        func write(_ key: String, length: Int) throws -> Record {
            try node.write { store, signer in
                try store.set(try Path("/d/\(key)"), to: .string(String(repeating: "a", count: length)), signer: signer,
                              nowMillis: SessionKnobTests.now())
            }
        }
        let atLimit = try write("x", length: 200)
        let past = try write("y", length: 201)
        let after = try write("z", length: 200)
        #expect(atLimit.encoded.count == limit && past.encoded.count == limit + 1 && after.encoded.count == limit)
        // Datagrams leave in the order written: once the last is in, the one past the limit
        // would have been too.
        #expect(CorruptChunkTests.eventually(10) { member.pushedRecords.contains { $0.id == after.id } })
        let ids = member.pushedRecords.map(\.id)
        #expect(ids.contains(atLimit.id))
        #expect(!ids.contains(past.id), "a record of \(limit + 1) bytes went out by datagram")
    }
}
