import Crypto
import Store
import Tree
import Wire

/// What the store told its client about every operation of a run: the oracle a reopened store is
/// checked against. It comes from the answers alone (acknowledged or failed), never from the
/// store's own state.
struct FaultLedger {
    enum Outcome: Equatable {
        /// The call returned: the store promised the write is durable.
        case acknowledged
        /// The call threw: the client was told it failed. The write may or may not be there
        /// afterwards (a commit whose sync failed can still be found in the log after a restart),
        /// but if it is, it is whole.
        case failed
    }

    /// Local sets, each at a path of its own.
    var sets: [(path: Path, value: JSONValue, outcome: Outcome)] = []
    /// Local sets of one shared path, in the order they were made (later ones win).
    var counter: [(value: JSONValue, outcome: Outcome)] = []
    /// Records from a peer, ingested in batches.
    var peerRecords: [(record: Record, outcome: Outcome)] = []
    /// Files stored.
    var files: [(path: String, bytes: [UInt8], outcome: Outcome)] = []

    var acknowledged: Int {
        sets.filter { $0.outcome == .acknowledged }.count + counter.filter { $0.outcome == .acknowledged }.count
            + peerRecords.filter { $0.outcome == .acknowledged }.count + files.filter { $0.outcome == .acknowledged }.count
    }
    var failed: Int {
        sets.filter { $0.outcome == .failed }.count + counter.filter { $0.outcome == .failed }.count
            + peerRecords.filter { $0.outcome == .failed }.count + files.filter { $0.outcome == .failed }.count
    }

    static let counterPath = try! Path("/counter")

    /// How many writes the client was told failed are there after all (allowed: SQLite reports a
    /// commit whose sync failed as failed, yet its frames may be found in the log at the next open).
    func failedButPresent(in store: Store) throws -> Int {
        var count = 0
        for (path, value, outcome) in sets where outcome == .failed {
            if try store.value(at: path) == value { count += 1 }
        }
        var held = Set<Digest32>()
        try store.forEachRecord { bytes in held.insert(try Record.decode(bytes, verify: false).id) }
        count += peerRecords.filter { $0.outcome == .failed && held.contains($0.record.id) }.count
        for (path, _, outcome) in files where outcome == .failed {
            if try store.fileInfo(path) != nil { count += 1 }
        }
        return count
    }

    /// Every way `store` breaks the promises made: an acknowledged write missing or changed, a
    /// failed one present in part or altered, anything present that was never written.
    func violations(in store: Store) throws -> [String] {
        var problems = [String]()
        for (path, value, outcome) in sets {
            let found = try store.value(at: path)
            switch outcome {
            case .acknowledged where found != value:
                problems.append("acknowledged set of \(path) lost: found \(found.serialized())")
            case .failed where found != value && found != .null:
                problems.append("failed set of \(path) left \(found.serialized()), neither nothing nor the value")
            default: break
            }
        }
        // Only paths that were written exist under /faults.
        let written = Set(sets.map { $0.path.key ?? "" })
        if case let .object(members) = try store.value(at: try Path("/faults")) {
            for key in members.keys where !written.contains(key) { problems.append("/faults/\(key) was never written") }
        }
        // The shared path holds the last acknowledged value or a failed one made after it.
        let lastAcknowledged = counter.lastIndex { $0.outcome == .acknowledged }
        let allowed = counter.indices.filter { index in
            if let lastAcknowledged { return index == lastAcknowledged || (index > lastAcknowledged && counter[index].outcome == .failed) }
            return true
        }.map { counter[$0].value } + (lastAcknowledged == nil ? [JSONValue.null] : [])
        let value = try store.value(at: Self.counterPath)
        if !allowed.contains(value) {
            problems.append("\(Self.counterPath) is \(value.serialized()); allowed: \(allowed.map { $0.serialized() })")
        }
        var held = Set<Digest32>()
        try store.forEachRecord { bytes in held.insert(try Record.decode(bytes, verify: false).id) }
        for (record, outcome) in peerRecords where outcome == .acknowledged && !held.contains(record.id) {
            problems.append("acknowledged peer record \(Hex.encode(record.id.bytes).prefix(16)) lost")
        }
        for (path, bytes, outcome) in files {
            do {
                let read = try store.readFile(path)
                if read != bytes { problems.append("file \(path) reads back different bytes") }
            } catch FileError.notFound(_) {
                if outcome == .acknowledged { problems.append("acknowledged file \(path) lost") }
            } catch {
                problems.append("file \(path): \(error)")
            }
        }
        return problems
    }
}
