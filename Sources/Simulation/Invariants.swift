import Crypto
import Node
import Store
import Sync
import Tree
import Wire

/// The invariants a run is checked against: some after every event (bounds, handshakes), some
/// at every restart (nothing acknowledged lost), the rest once the network healed and the
/// nodes went quiet. Each returns the first violation it finds, described for the report.
struct Invariants {
    let config: NodeConfigLimits
    private(set) var checks: [InvariantKind: Int] = [:]

    /// What the bounds are measured against (Protocol.md §9 and the node's constants).
    struct NodeConfigLimits {
        var maxSessions = 64
        var handshakeTimeout = 10.0
        var hosts = 5
    }

    init(config: NodeConfigLimits) { self.config = config }

    mutating func tick(_ kind: InvariantKind) { checks[kind, default: 0] += 1 }

    /// After an event of `host`: its tables and queues within their bounds, and no session
    /// older than the handshake timeout still in its handshake (unless the host just thawed,
    /// when the timers held back have not run yet).
    mutating func afterEvent(_ gauges: NodeGauges, settled: Bool) -> String? {
        tick(.bounds)
        if gauges.sessions > config.maxSessions { return "\(gauges.sessions) sessions, above the limit of \(config.maxSessions)" }
        if gauges.maxBatchesInFlight > Node.maxBatchesInFlight {
            return "a session has \(gauges.maxBatchesInFlight) batches in flight, above \(Node.maxBatchesInFlight)"
        }
        // Past maxQueuedBytes a peer's connection is not read (and, stalled, nothing more is
        // pushed to it: SimRun checks that). One turn's output may come on top: a `want` answer
        // (8 MiB and the record that reaches it, at most 1 MiB), the first part of the records a
        // reconciliation reply found missing (1 MiB and one record), a few pushed records, the
        // Noise and frame overhead of all that (Protocol.md §8.2, §8.3, §9).
        let queueBound = Node.maxQueuedBytes + PeerSession.maxWantAnswerBytes + (6 << 20)
        if gauges.maxQueuedBytes > queueBound {
            return "\(gauges.maxQueuedBytes) bytes queued for one peer, above \(queueBound)"
        }
        if gauges.discovered > config.hosts - 1 || gauges.lastHeard > config.hosts - 1 {
            return "\(gauges.discovered) peers discovered and \(gauges.lastHeard) heard, with \(config.hosts - 1) others on the LAN"
        }
        if gauges.clockLeads > gauges.sessions { return "\(gauges.clockLeads) clock leads kept for \(gauges.sessions) sessions" }
        if gauges.chunksInFlight > 64 * max(1, gauges.sessions) {
            return "\(gauges.chunksInFlight) chunk requests in flight over \(gauges.sessions) sessions"
        }
        if settled {
            tick(.noStuckHandshake)
            if gauges.oldestHandshakeSeconds > config.handshakeTimeout + 1 {
                return "a session is still in its handshake after \(gauges.oldestHandshakeSeconds) s (timeout \(config.handshakeTimeout) s)"
            }
        }
        return nil
    }

    /// At a restart: every write the host acknowledged before is in its store.
    mutating func afterRestart(_ host: SimHost, model: Model) -> String? {
        tick(.ackedSurvivesCrash)
        guard let node = host.node else { return nil }
        let ids = Set(((try? node.read { try $0.recordKeys() }) ?? []).map(\.id))
        let lost = (model.acknowledged[host.index] ?? []).filter { !ids.contains($0.bytes) }
        return lost.isEmpty ? nil : "n\(host.index) lost \(lost.count) acknowledged records in a crash (first \(lost[0]))"
    }

    /// Once healed and quiet: the same records and tree everywhere, every acknowledged write
    /// everywhere, owners' data as they wrote it, photos complete, memory matching disk.
    mutating func final(_ hosts: [SimHost], model: Model) -> String? {
        var sets = [(host: Int, ids: Set<[UInt8]>)]()
        var treeHashes = [(host: Int, hash: Digest32)]()
        let honest = Set(hosts.filter { !$0.hostile }.map(\.userID))
        let root = try! Path(segments: [])
        for host in hosts {
            guard let node = host.node else { return "n\(host.index) is not running at the end" }
            let keys: [(clock: UInt64, id: [UInt8])]
            let tree: JSONValue
            do {
                (keys, tree) = try node.read { store in (try store.recordKeys(), try store.value(at: root)) }
            } catch {
                return "n\(host.index) cannot read its store: \(error)"
            }
            let ids = Set(keys.map(\.id))
            sets.append((host.index, ids))
            treeHashes.append((host.index, BLAKE2b.digest256(Array(tree.serialized().utf8))))

            tick(.memoryMatchesDisk)
            let inMemory = node.queue.sync { node.recordSetSummaryOnQueue().count }
            if inMemory != ids.count { return "n\(host.index) holds \(ids.count) records in its store but \(inMemory) in memory" }

            tick(.ackedEverywhere)
            for (writer, acked) in model.acknowledged {
                if let missing = acked.first(where: { !ids.contains($0.bytes) }) {
                    return "n\(host.index) lacks record \(missing) acknowledged by n\(writer)"
                }
            }

            tick(.ownersOnly)
            if let wrong = checkOwners(tree, honest: honest, model: model) { return "on n\(host.index): \(wrong)" }

            tick(.filesComplete)
            for path in model.referencedFiles {
                guard let info = try? node.read({ try $0.fileInfo(path) }) else { return "n\(host.index) does not know the photo \(path)" }
                if !info.isComplete { return "n\(host.index) lacks \(info.missing.count) chunks of \(path)" }
            }
        }
        tick(.convergence)
        if let first = sets.first {
            for other in sets.dropFirst() where other.ids != first.ids {
                return "n\(first.host) and n\(other.host) hold different records (\(first.ids.count) and \(other.ids.count); "
                    + "\(first.ids.subtracting(other.ids).count) only on n\(first.host), \(other.ids.subtracting(first.ids).count) only on n\(other.host))"
            }
        }
        if let first = treeHashes.first {
            for other in treeHashes.dropFirst() where other.hash != first.hash {
                return "n\(first.host) and n\(other.host) show different trees with the same records"
            }
        }
        return nil
    }

    /// Profiles and messages of honest users exactly as they wrote them.
    private func checkOwners(_ tree: JSONValue, honest: Set<String>, model: Model) -> String? {
        let users = tree.objectValue?["users"]?.objectValue ?? [:]
        for uid in honest {
            let expected: JSONValue = (model.profiles[uid] ?? [:]).isEmpty ? .null : .object(model.profiles[uid]!)
            let shown = users[uid] ?? .null
            if shown != expected { return "profile of \(uid.prefix(8)) is \(shown.serialized()), its owner wrote \(expected.serialized())" }
        }
        let messages = tree.objectValue?["conversations"]?.objectValue?[Layout.conversation]?.objectValue?["messages"]?.objectValue ?? [:]
        for (key, entry) in model.messages {
            let shown = messages[key] ?? .null
            let expected = entry.value ?? .null
            if shown != expected {
                return "message \(key) of \(entry.owner.prefix(8)) is \(shown.serialized().prefix(200)), its owner wrote \(expected.serialized().prefix(200))"
            }
        }
        for (key, value) in messages where model.messages[key] == nil {
            if case let .string(sender)? = value.objectValue?["senderId"], honest.contains(sender) {
                return "message \(key) claims \(sender.prefix(8)) as sender, who never wrote it"
            }
            if honest.contains(where: { MessageKey.isBound(key, to: $0) }) {
                return "message \(key) is bound to an honest user who never wrote it"
            }
        }
        return nil
    }
}
