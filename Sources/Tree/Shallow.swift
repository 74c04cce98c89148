// The `shallow=true` read: a location's value with every child cut down to `true`.

/// The value `GET ...?shallow=true` returns for a location holding `value`: primitives and null
/// as they are, an object as `{child: true}` for each child. Lets a client list the keys of a
/// large location without downloading what is below them.
public func shallow(_ value: JSONValue) -> JSONValue {
    switch value {
    case .null, .bool, .number, .string:
        return value
    case .object(let members):
        return .object(members.mapValues { _ in .bool(true) })
    case .array(let items):
        // Raw (unnormalized) input: the array's non-null elements are children "0", "1", ...
        var members: [String: JSONValue] = [:]
        for (index, item) in items.enumerated() where !item.isNull { members[String(index)] = .bool(true) }
        return members.isEmpty ? .null : .object(members)
    }
}
