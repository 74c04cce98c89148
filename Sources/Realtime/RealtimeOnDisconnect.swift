import Tree

/// The writes a client asked to be made when its connection ends (`o` set, `om` update, `oc`
/// cancel), in the order asked. The node makes them as its own signed writes when the socket
/// closes for any reason, so a client that vanishes (a crash, a pulled cable) still leaves its
/// presence flag cleared. Bounded in count and bytes, since a client could ask for any number.
public struct RealtimeOnDisconnect: Sendable {
    public enum Operation: Equatable, Sendable {
        case set(Path, JSONValue)
        case update(Path, [String: JSONValue])
    }

    public private(set) var operations: [Operation] = []
    private var bytes = 0
    public let maxOperations: Int
    public let maxBytes: Int

    public init(maxOperations: Int = 1000, maxBytes: Int = 16 << 20) {
        self.maxOperations = maxOperations
        self.maxBytes = maxBytes
    }

    public mutating func add(_ operation: Operation) throws(RealtimeError) {
        let size: Int
        switch operation {
        case let .set(_, value): size = value.serialized().utf8.count
        case let .update(_, members): size = JSONValue.object(members).serialized().utf8.count
        }
        guard operations.count < maxOperations, bytes + size <= maxBytes else {
            throw RealtimeError("too_big", "Too many onDisconnect writes (at most \(maxOperations), \(maxBytes) bytes)")
        }
        operations.append(operation)
        bytes += size
    }

    /// Forgets every write at or below `path`, and the members of updates above it that fall
    /// at or below it (what `onDisconnect().cancel()` at `path` means).
    public mutating func cancel(at path: Path) {
        operations = operations.compactMap { operation in
            switch operation {
            case let .set(at, _):
                return path.isAncestorOrSelf(of: at) ? nil : operation
            case let .update(at, members):
                if path.isAncestorOrSelf(of: at) { return nil }
                guard at.isAncestor(of: path) else { return operation }
                let kept = members.filter { key, _ in
                    guard let full = try? at.appending(Path(key)) else { return true }
                    return !path.isAncestorOrSelf(of: full)
                }
                return kept.isEmpty ? nil : .update(at, kept)
            }
        }
    }
}
