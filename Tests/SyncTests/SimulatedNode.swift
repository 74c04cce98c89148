import Crypto
import Sync
import Tree
import Wire

/// A node for sans-IO tests: its record set lives in memory.
final class MemoryNode: RecordSource {
    let identity: PrivateKey
    let instance: [UInt8]
    var records: [Digest32: [UInt8]] = [:]
    var clocks: [Digest32: UInt64] = [:]
    var chunks: [Digest32: [UInt8]] = [:]
    private var cached: NegentropySortedItems?

    init(seed: UInt8) {
        identity = try! PrivateKey(seedBytes: [UInt8](repeating: seed, count: 32))
        instance = [UInt8](repeating: seed, count: 8)
    }

    /// Verifies and adds records; returns the ones that were new.
    @discardableResult
    func add(_ encodings: [[UInt8]]) -> [[UInt8]] {
        var added = [[UInt8]]()
        for bytes in encodings {
            guard let record = try? Record.decode(bytes), records[record.id] == nil else { continue }
            records[record.id] = bytes
            clocks[record.id] = record.clock
            added.append(bytes)
        }
        if !added.isEmpty { cached = nil }
        return added
    }

    func write(_ text: String, clock: UInt64) -> [UInt8] {
        let path = try! Path(segments: ["notes", Hex.encode(identity.publicKey.bytes.prefix(4)), String(clock)])
        let record = try! Record.make(body: .write([WritePair(path: path, value: .string(text))]), clock: clock, signer: identity)
        add([record.encoded])
        return record.encoded
    }

    func reconciliationItems() -> NegentropySortedItems {
        if let cached { return cached }
        let items = NegentropySortedItems(records.keys.map { NegentropyItem(timestamp: clocks[$0]!, id: $0.bytes)! })
        cached = items
        return items
    }

    func records(_ ids: [Digest32]) -> [[UInt8]] { ids.compactMap { records[$0] } }

    func summary() -> (count: UInt64, fingerprint: [UInt8]) { (UInt64(records.count), [UInt8](repeating: 0, count: 16)) }

    func chunk(_ hash: Digest32) -> [UInt8]? { chunks[hash] }

    /// Holds `bytes` as a chunk and returns its hash.
    func addChunk(_ bytes: [UInt8]) -> Digest32 {
        let hash = try! Digest32(bytes: BLAKE2b.hash(bytes))
        chunks[hash] = bytes
        return hash
    }
}

/// Two session machines wired back to back, delivering every `send` to the other side at once
/// (in order, as TCP does), for tests of one session.
struct SessionPair {
    var a: PeerSession
    var b: PeerSession
    let nodeA: MemoryNode
    let nodeB: MemoryNode
    var closed: [String] = []
    var established = 0
    var rounds = 0

    init(_ nodeA: MemoryNode, _ nodeB: MemoryNode, keyA: NetworkKey, keyB: NetworkKey) {
        self.nodeA = nodeA
        self.nodeB = nodeB
        a = PeerSession(role: .initiator, identity: nodeA.identity, instance: nodeA.instance, networkKey: keyA,
                        expectedAuthor: nodeB.identity.publicKey)
        b = PeerSession(role: .responder, identity: nodeB.identity, instance: nodeB.instance, networkKey: keyB)
    }

    /// Runs `first` (actions of side A) and everything it causes until no bytes are in flight.
    mutating func run(_ first: [PeerSession.Action]) {
        var queue: [(toB: Bool, bytes: [UInt8])] = []
        func handle(_ actions: [PeerSession.Action], fromA: Bool, _ pair: inout SessionPair) {
            for action in actions {
                switch action {
                case let .send(bytes): queue.append((fromA, bytes))
                case .established: pair.established += 1
                case let .received(records):
                    let added = (fromA ? pair.nodeA : pair.nodeB).add(records)
                    _ = added
                case .roundComplete: pair.rounds += 1
                case .chunkReceived, .chunksMissing, .liveReceived: break
                case let .close(reason, _): pair.closed.append(reason)
                }
            }
        }
        handle(first, fromA: true, &self)
        while !queue.isEmpty || a.recordsToOfferCount > 0 {
            guard !queue.isEmpty else {
                // As the node does once the connection has taken what was written before.
                handle(a.serveOffers(from: nodeA, maxBytes: 64 << 10), fromA: true, &self)
                continue
            }
            let (toB, bytes) = queue.removeFirst()
            if toB {
                let actions = b.receive(bytes, from: nodeB)
                handle(actions, fromA: false, &self)
            } else {
                let actions = a.receive(bytes, from: nodeA)
                handle(actions, fromA: true, &self)
            }
        }
    }
}
