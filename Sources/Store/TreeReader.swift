import SQLite
import Tree

extension Store {
    /// The value at `path`: a range scan of the leaves at and below it, assembled into a tree.
    /// `null` when absent (including below a primitive).
    public func value(at path: Path) throws -> JSONValue {
        let key = StoreKey.of(path)
        let (low, high) = StoreKey.descendants(key)
        let root = Assembly()
        var found = false
        try db.query("SELECT path, kind, value FROM leaves WHERE path = ? OR (path >= ? AND path < ?) ORDER BY path",
                     [.text(key), .text(low), .text(high)]) { row in
            found = true
            let relative = row.text(0).utf8.dropFirst(key.utf8.count)
            root.insert(relative.split(separator: 1).map { String(decoding: $0, as: UTF8.self) },
                        LeafValue.decode(kind: row.int64(1), row: row, column: 2))
        }
        return found ? root.value : .null
    }

    /// The keys directly under `path`, in storage order, without reading their subtrees: a
    /// skip scan that seeks past each child's range.
    public func childKeys(of path: Path, limit: Int = .max, reverse: Bool = false) throws -> [String] {
        let key = StoreKey.of(path)
        let (low, high) = StoreKey.descendants(key)
        var keys = [String]()
        var lower = low
        var upper = high
        let sql = reverse
            ? "SELECT path FROM leaves WHERE path >= ? AND path < ? ORDER BY path DESC LIMIT 1"
            : "SELECT path FROM leaves WHERE path >= ? AND path < ? ORDER BY path LIMIT 1"
        while keys.count < limit {
            guard let next = try db.first(sql, [.text(lower), .text(upper)], { $0.text(0) }) else { break }
            let rest = next.utf8.dropFirst(low.utf8.count)
            let child = String(decoding: rest.prefix { $0 != 1 }, as: UTF8.self)
            keys.append(child)
            if reverse {
                upper = low + child
            } else {
                lower = low + child + StoreKey.afterSeparator
            }
        }
        return keys
    }
}

/// Builds a tree from leaves read in path order. Where a primitive and deeper leaves meet (a
/// protected zone below a primitive written by someone else), the deeper leaves win.
private final class Assembly {
    var scalar: JSONValue?
    var children: [String: Assembly] = [:]

    func insert(_ segments: [String], _ value: JSONValue) {
        var node = self
        for segment in segments {
            if let next = node.children[segment] {
                node = next
            } else {
                let next = Assembly()
                node.children[segment] = next
                node = next
            }
        }
        node.scalar = value
    }

    var value: JSONValue {
        if children.isEmpty { return scalar ?? .null }
        return .object(children.mapValues(\.value))
    }
}
