import Tree

/// JSON documents, paths and Firebase queries (Protocol.md §5, the local API). Invariants: the
/// serializer's output parses back to the same value and serializes to the same text; an
/// accepted path keeps §5.1's limits and has one spelling; a query's answer holds only children
/// of the queried value, unchanged, within its limit.
public enum TreeChecks {
    static func json(_ input: [UInt8]) throws(FuzzViolation) {
        let t = FuzzTarget.json
        guard let value = try? JSONValue.parse(input) else { return }
        let text = value.serialized()
        guard let again = try? JSONValue.parse(text) else {
            throw FuzzViolation(target: t.rawValue, message: "serialized output does not parse: \(text.prefix(200))")
        }
        try require(again.serialized() == text, t, "serialization is not stable: \(text.prefix(200))")
        guard let normal = try? value.normalized() else { return }
        let normalText = normal.serialized()
        guard let reparsed = try? JSONValue.parse(normalText), let renormal = try? reparsed.normalized() else {
            throw FuzzViolation(target: t.rawValue, message: "a normalized value's text does not parse back: \(normalText.prefix(200))")
        }
        try require(renormal == normal, t, "normalized value changed on a round trip: \(normalText.prefix(200))")
        try require(renormal.serialized() == normalText, t, "normalized serialization is not stable")
        try checkTreeForm(normal, t)
    }

    /// Tree form: no arrays, no null members, no empty objects, every key valid.
    static func checkTreeForm(_ value: JSONValue, _ t: FuzzTarget) throws(FuzzViolation) {
        switch value {
        case .array: throw FuzzViolation(target: t.rawValue, message: "an array in a normalized value")
        case let .object(members):
            try require(!members.isEmpty, t, "an empty object in a normalized value")
            for (key, member) in members {
                try require(Key.isValid(key), t, "invalid key \(key.debugDescription) in a normalized value")
                try require(CanonicalText.isNFC(key), t, "key \(key.debugDescription) of a normalized value not in NFC")
                try require(!member.isNull, t, "a null member in a normalized value")
                try checkTreeForm(member, t)
            }
        case let .number(n):
            try require(n.isFinite, t, "a non-finite number")
        case .null, .bool, .string:
            break
        }
    }

    static func path(_ input: [UInt8]) throws(FuzzViolation) {
        let t = FuzzTarget.path
        let text = String(decoding: input, as: UTF8.self)
        if let path = try? Path(text) {
            try require(path.depth <= Path.maxDepth && path.byteLength <= Path.maxByteLength, t, "limits not enforced: \(path)")
            try require(path.segments.allSatisfy(Key.isValid), t, "an invalid key in \(path)")
            try require(path.segments.allSatisfy(CanonicalText.isNFC), t, "a key of \(path) not in NFC")
            try require(path.byteLength == (path.isRoot ? 0 : path.storageKey.utf8.count - 1), t, "byteLength disagrees with storageKey")
            try require((try? Path(storageKey: path.storageKey)) == path, t, "storageKey does not parse back: \(path.storageKey.debugDescription)")
            try require((try? Path(path.description)) == path, t, "description does not parse back")
            try require((try? Path(segments: path.segments)) == path, t, "segments do not rebuild the path")
            if let parent = path.parent {
                try require(parent.isAncestor(of: path) && path.relative(to: parent)?.segments == [path.key!], t, "parent relation broken")
            }
        }
        if let path = try? Path(storageKey: text) {
            // One path, one spelling: the storage key is the text with its keys in NFC.
            try require(path.storageKey.utf8.elementsEqual(CanonicalText.nfc(text).utf8), t,
                        "a storage key with two spellings: \(text.debugDescription)")
            try require((try? Path(text)) == path, t, "a storage key that Path(_:) reads differently")
        }
        if Key.isValid(text) {
            // The limit applies to the key in NFC, which may be longer or shorter than as written.
            try require(CanonicalText.nfc(text).utf8.count > Path.maxByteLength || (try? Path(segments: [text])) != nil, t,
                        "a valid key is not a valid path")
        }
    }

    /// A tree with children of every kind, ordering values and keys that sort as numbers.
    static let tree: JSONValue = .object([
        "a": .object(["n": .number(3), "s": .string("x")]), "b": .object(["n": .number(1)]), "c": .number(5),
        "d": .string("str"), "e": .bool(true), "9": .object(["n": .number(2), "s": .string("y")]),
        "10": .object(["n": .object(["deep": .number(-1)])]), "-1": .number(0.5), "Z": .bool(false),
    ])
    static let values: [JSONValue] = [tree, .array([.number(1), .null, .string("b")]), .string("s"), .null]

    /// Query parameters as `name=value` joined by `&` (values already percent-decoded).
    static func query(_ input: [UInt8]) throws(FuzzViolation) {
        let t = FuzzTarget.query
        let text = String(decoding: input, as: UTF8.self)
        let params: [(String, String)] = text.split(separator: "&", omittingEmptySubsequences: false).map { piece in
            guard let equals = piece.firstIndex(of: "=") else { return (String(piece), "") }
            return (String(piece[..<equals]), String(piece[piece.index(after: equals)...]))
        }
        guard let query = try? FirebaseQuery.parse(params) else { return }
        for value in values {
            let answer = query.apply(to: value)
            let children: [String: JSONValue]
            switch value {
            case let .object(members): children = members
            case let .array(items):
                var members = [String: JSONValue]()
                for (index, item) in items.enumerated() where !item.isNull { members[String(index)] = item }
                children = members
            case .null:
                try require(answer == .null, t, "a query on null answered \(answer)")
                continue
            default:
                try require(answer == (query.isFiltered ? .null : value), t, "a query on a primitive answered \(answer)")
                continue
            }
            guard case let .object(kept) = answer else {
                throw FuzzViolation(target: t.rawValue, message: "a query on an object answered \(answer)")
            }
            for (key, member) in kept {
                try require(children[key] == member, t, "the answer holds \(key.debugDescription), not a child as it is")
            }
            switch query.limit {
            case let .first(n)?, let .last(n)?:
                try require(kept.count <= n, t, "\(kept.count) children kept with a limit of \(n)")
            case nil:
                if !query.isFiltered { try require(kept.count == children.count, t, "an order-only query dropped children") }
            }
        }
    }
}
