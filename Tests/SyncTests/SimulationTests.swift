import Crypto
import Testing
@testable import Sync
import Wire
import TestSupport

/// A deterministic network of nodes running real session machines: sessions over simulated
/// connections (in order per direction, with random delays), records pushed as datagrams that
/// are lost, duplicated and reordered, and partitions that cut connections and later heal.
final class Simulation {
    struct Link {
        let i: Int, j: Int
        var a: PeerSession   // at node i
        var b: PeerSession   // at node j
        var toB: [(due: Int, bytes: [UInt8])] = []
        var toA: [(due: Int, bytes: [UInt8])] = []
        var open = true
    }

    var rng: SplitMix64
    let network = NetworkKey.named("simulation")
    var nodes: [MemoryNode]
    var links: [Link] = []
    var datagrams: [(due: Int, to: Int, bytes: [UInt8])] = []
    var now = 0
    var group: [Int]
    var written = 0
    let loss: Double, duplication: Double

    init(nodes count: Int, seed: UInt64, loss: Double = 0.2, duplication: Double = 0.1) {
        rng = SplitMix64(seed: seed)
        nodes = (0..<count).map { MemoryNode(seed: UInt8($0 + 1)) }
        group = Array(repeating: 0, count: count)
        self.loss = loss
        self.duplication = duplication
    }

    /// A ring plus random chords, so the graph stays connected whatever the chords.
    func neighbourPairs() -> [(Int, Int)] {
        var pairs = Set<[Int]>()
        for i in 0..<nodes.count { pairs.insert([i, (i + 1) % nodes.count].sorted()) }
        for i in 0..<nodes.count {
            let j = Int(rng.next() % UInt64(nodes.count))
            if j != i { pairs.insert([i, j].sorted()) }
        }
        return pairs.sorted { $0[0] * 1000 + $0[1] < $1[0] * 1000 + $1[1] }.map { ($0[0], $0[1]) }
    }

    func connect(_ i: Int, _ j: Int) {
        var link = Link(i: i, j: j,
                        a: PeerSession(role: .initiator, identity: nodes[i].identity, instance: nodes[i].instance,
                                       networkKey: network, expectedAuthor: nodes[j].identity.publicKey),
                        b: PeerSession(role: .responder, identity: nodes[j].identity, instance: nodes[j].instance, networkKey: network))
        let actions = link.a.start()
        links.append(link)
        perform(actions, link: links.count - 1, atA: true)
    }

    func delay() -> Int { 1 + Int(rng.next() % 5) }

    func perform(_ actions: [PeerSession.Action], link index: Int, atA: Bool) {
        for action in actions {
            switch action {
            case let .send(bytes):
                // In order per direction, as on a TCP connection.
                if atA {
                    let due = max(links[index].toB.last?.due ?? 0, now + delay())
                    links[index].toB.append((due, bytes))
                } else {
                    let due = max(links[index].toA.last?.due ?? 0, now + delay())
                    links[index].toA.append((due, bytes))
                }
            case let .received(records):
                let node = atA ? links[index].i : links[index].j
                relay(nodes[node].add(records), from: node, except: index)
            case .close:
                links[index].open = false
            case .established, .roundComplete, .chunkReceived, .chunksMissing, .liveReceived:
                break
            }
        }
    }

    /// New records go on every other open session of the node.
    func relay(_ records: [[UInt8]], from node: Int, except: Int?) {
        guard !records.isEmpty else { return }
        for index in links.indices where index != except && links[index].open {
            if links[index].i == node { perform(links[index].a.push(records), link: index, atA: true) }
            if links[index].j == node { perform(links[index].b.push(records), link: index, atA: false) }
        }
    }

    func write(at node: Int) {
        written += 1
        let record = nodes[node].write("message \(written)", clock: UInt64(1_000_000 + now) << 16 | UInt64(node))
        for other in nodes.indices where other != node && group[other] == group[node] {
            if rng.chance(loss) { continue }
            datagrams.append((now + delay(), other, record))
            if rng.chance(duplication) { datagrams.append((now + delay() + 3, other, record)) }
        }
        relay([record], from: node, except: nil)
    }

    func step() {
        now += 1
        var pending = datagrams.filter { $0.due <= now }
        datagrams.removeAll { $0.due <= now }
        pending.shuffle(using: &rng)
        for d in pending { relay(nodes[d.to].add([d.bytes]), from: d.to, except: nil) }
        for index in links.indices where links[index].open {
            while let first = links[index].toB.first, first.due <= now, links[index].open {
                links[index].toB.removeFirst()
                perform(links[index].b.receive(first.bytes, from: nodes[links[index].j]), link: index, atA: false)
            }
            while let first = links[index].toA.first, first.due <= now, links[index].open {
                links[index].toA.removeFirst()
                perform(links[index].a.receive(first.bytes, from: nodes[links[index].i]), link: index, atA: true)
            }
            // As the node does once the connection has taken what was written before.
            if links[index].open && links[index].toB.isEmpty {
                perform(links[index].a.serveOffers(from: nodes[links[index].i], maxBytes: 64 << 10), link: index, atA: true)
            }
        }
    }

    /// Anti-entropy: every node starts a round on one random open session it dialled.
    func antiEntropy() {
        for node in nodes.indices {
            let mine = links.indices.filter { links[$0].open && links[$0].i == node && links[$0].a.isEstablished }
            guard let index = mine.randomElement(using: &rng) else { continue }
            perform(links[index].a.startRound(source: nodes[node]), link: index, atA: true)
        }
    }

    /// Splits the nodes into two groups; sessions across the split break.
    func partition() {
        for i in nodes.indices { group[i] = Int(rng.next() % 2) }
        for index in links.indices where group[links[index].i] != group[links[index].j] { links[index].open = false }
    }

    /// Ends every partition; broken sessions are dialled again.
    func heal() {
        for i in nodes.indices { group[i] = 0 }
        links.removeAll { !$0.open }
        let existing = Set(links.map { [$0.i, $0.j] })
        for (i, j) in neighbourPairs() where !existing.contains([i, j]) { connect(i, j) }
    }

    var converged: Bool {
        let first = Set(nodes[0].records.keys)
        return nodes.allSatisfy { Set($0.records.keys) == first }
    }
}

@Suite("Deterministic simulation")
struct SimulationTests {
    @Test("20 nodes with loss, duplication, reordering and partitions converge", arguments: [1, 2, 3] as [UInt64])
    func twentyNodes(seed: UInt64) {
        let sim = Simulation(nodes: 20, seed: seed)
        for (i, j) in sim.neighbourPairs() { sim.connect(i, j) }
        for tick in 0..<400 {
            if tick % 3 == 0 { sim.write(at: Int(sim.rng.next() % 20)) }
            if tick % 10 == 0 { sim.antiEntropy() }
            if tick == 100 || tick == 250 { sim.partition() }
            if tick == 180 || tick == 330 { sim.heal() }
            sim.step()
        }
        sim.heal()
        var ticks = 0
        while !sim.converged && ticks < 2000 {
            if ticks % 10 == 0 { sim.antiEntropy() }
            sim.step()
            ticks += 1
        }
        #expect(sim.converged, "seed \(seed): not converged after \(ticks) quiet ticks")
        #expect(sim.nodes[0].records.count == sim.written)
    }
}
