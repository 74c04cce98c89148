import Tree

/// Builds a pair's value from its events (`ContentEvent`), for a pair known to be small enough
/// to hold whole (a pair in a zone, at most `LargeWrite.pairLimits.maxItems` items).
public struct ContentValueBuilder {
    private var stack: [(members: [String: JSONValue], key: String?)] = []
    private var pendingKey: String?
    /// The value, once its last event was added.
    public private(set) var value: JSONValue?

    public init() {}

    public mutating func add(_ event: ContentEvent) {
        switch event {
        case let .objectStart(count):
            stack.append((members: Dictionary(minimumCapacity: min(count, 1 << 16)), key: pendingKey))
            pendingKey = nil
        case let .key(key):
            pendingKey = key
        case let .leaf(leaf):
            place(leaf, at: pendingKey)
            pendingKey = nil
        case .objectEnd:
            let frame = stack.removeLast()
            place(.object(frame.members), at: frame.key)
        case .pair, .pairEnd:
            return
        }
    }

    private mutating func place(_ child: JSONValue, at key: String?) {
        if stack.isEmpty { value = child } else if let key { stack[stack.count - 1].members[key] = child }
    }
}
