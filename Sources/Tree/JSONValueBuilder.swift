/// Builds a `JSONValue` from the events of a `JSONStreamReader`, for the few values a streamed
/// body holds whole (a server value's spec) and for tests that compare the reader with
/// `JSONValue.parse`. A key repeated in an object keeps its last value, as the parser does.
public struct JSONValueBuilder {
    private var stack: [(members: [String: JSONValue]?, items: [JSONValue], key: String?)] = []

    public init() {}

    /// How many objects and arrays are open.
    public var depth: Int { stack.count }

    /// Takes one event; returns the value once the outermost one is complete.
    public mutating func take(_ event: JSONStreamEvent) -> JSONValue? {
        let done: JSONValue
        switch event {
        case let .scalar(value): done = value
        case .objectStart: stack.append(([:], [], nil)); return nil
        case .arrayStart: stack.append((nil, [], nil)); return nil
        case let .key(key): stack[stack.count - 1].key = key; return nil
        case .objectEnd: done = .object(stack.removeLast().members ?? [:])
        case .arrayEnd: done = .array(stack.removeLast().items)
        }
        guard !stack.isEmpty else { return done }
        let top = stack.count - 1
        if stack[top].members != nil {
            stack[top].members![stack[top].key ?? ""] = done
        } else {
            stack[top].items.append(done)
        }
        return nil
    }
}
