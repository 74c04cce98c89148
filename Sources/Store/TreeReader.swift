import SQLite
import Tree

extension Store {
    /// The value at `path`: the open zone's leaves at and below it (a range scan) with every
    /// protected zone at or below it grafted in; inside a zone, the zone's own value.
    /// `null` when absent (including below a primitive). A disk that fails the read is told as
    /// such, with the file (`StoreError.diskFailure`).
    public func value(at path: Path) throws -> JSONValue {
        try tellingDiskErrors { try TreeReader(db: db).value(at: path) }
    }

    /// The zones, able to fold again the pairs of sealed writes this node may read and of
    /// large writes whose content is held.
    var zones: ZoneStore {
        let store = self
        return ZoneStore(db: db, opener: { [unowned self] in self.openedPairs($0) }, largeWritePairs: { write, body in
            guard try store.checkLargeWriteContent(write) == .valid else { return false }
            try store.forEachLargeWriteZonePair(write, body)
            return true
        }, orderCache: zoneOrderCache)
    }

    static func relativeSegments(_ storeKey: String, below key: String) -> [String] {
        storeKey.utf8.dropFirst(key.utf8.count).split(separator: 1).map { String(decoding: $0, as: UTF8.self) }
    }

    /// Whether the value at `path` has more than `rows` leaves or zones at or below it (counted
    /// no further than that), so that a read had better write it out a piece at a time
    /// (`TreeSnapshot`) than build it whole. A value inside a zone is one row: never large.
    public func isLargeValue(at path: Path, rows: Int = TreeStream.wholeReadRows) throws -> Bool {
        try TreeReader(db: db).isLarge(path, rows: rows)
    }

    /// The keys directly under `path`, in bytewise order, without reading their subtrees.
    public func childKeys(of path: Path, limit: Int = .max, reverse: Bool = false) throws -> [String] {
        try TreeReader(db: db).childKeys(of: path, limit: limit, reverse: reverse)
    }
}

/// Reads of the materialized tree over one connection: the store's own, or a snapshot's
/// (`TreeSnapshot`), which reads the same tables on a connection of its own.
struct TreeReader {
    let db: Connection

    var zones: ZoneStore { ZoneStore(db: db) }

    /// See `Store.isLargeValue(at:)`.
    func isLarge(_ path: Path, rows: Int) throws -> Bool {
        guard Zone.of(path) == .open else { return false }
        let key = StoreKey.of(path)
        let (low, high) = StoreKey.descendants(key)
        let limit = Int64(rows + 1)
        let leaves = try db.scalarInt("SELECT count(*) FROM (SELECT 1 FROM leaves WHERE path >= ? AND path < ? LIMIT ?)",
                                      [.text(low), .text(high), .integer(limit)]) ?? 0
        if leaves >= limit { return true }
        let zones = try db.scalarInt("SELECT count(*) FROM (SELECT 1 FROM zones WHERE zone >= ? AND zone < ? AND value IS NOT NULL LIMIT ?)",
                                     [.text(low), .text(high), .integer(limit)]) ?? 0
        return leaves + zones >= limit
    }

    /// See `Store.value(at:)`.
    func value(at path: Path) throws -> JSONValue {
        let zone = Zone.of(path)
        if zone != .open {
            let relative = path.relative(to: zone.root) ?? .root
            return try zones.value(of: zone).value(at: relative)
        }
        let key = StoreKey.of(path)
        let (low, high) = StoreKey.descendants(key)
        let root = Assembly()
        var found = false
        try db.query("SELECT path, kind, \(LeafValue.column) FROM leaves WHERE path = ? OR (path >= ? AND path < ?) ORDER BY path",
                     [.text(key), .text(low), .text(high)]) { row in
            found = true
            root.insert(Store.relativeSegments(row.text(0), below: key), LeafValue.decode(kind: row.int64(1), row: row, column: 2))
        }
        try db.query("SELECT zone, \(ZoneStore.valueColumns) FROM zones WHERE zone >= ? AND zone < ? AND value IS NOT NULL",
                     [.text(low), .text(high)]) { row in
            let zoneKey = row.text(0)
            let zonePath = try StoreKey.path(zoneKey)
            let value = try ZoneStore.storedValue(row, column: 1, zone: Zone.of(zonePath))
            found = true
            root.graft(Store.relativeSegments(zoneKey, below: key), value)
        }
        return found ? root.value : .null
    }

    /// The keys directly under `path`, in bytewise order, without reading their subtrees: skip
    /// scans over the leaves and the zones that seek past each child's range.
    func childKeys(of path: Path, limit: Int = .max, reverse: Bool = false) throws -> [String] {
        let zone = Zone.of(path)
        if zone != .open {
            guard case let .object(members) = try value(at: path) else { return [] }
            let sorted = members.keys.sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }
            return Array((reverse ? sorted.reversed() : sorted).prefix(limit))
        }
        let leaves = try skipScan("leaves", "path", below: path, limit: limit, reverse: reverse)
        let zones = try skipScan("zones", "zone", below: path, limit: limit, reverse: reverse, extra: "AND value IS NOT NULL")
        let merged = Set(leaves).union(zones).sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }
        return Array((reverse ? merged.reversed() : merged).prefix(limit))
    }

    private func skipScan(_ table: String, _ column: String, below path: Path, limit: Int, reverse: Bool, extra: String = "") throws -> [String] {
        let (low, high) = StoreKey.descendants(StoreKey.of(path))
        var keys = [String]()
        var lower = low, upper = high
        let sql = "SELECT \(column) FROM \(table) WHERE \(column) >= ? AND \(column) < ? \(extra) ORDER BY \(column) \(reverse ? "DESC" : "") LIMIT 1"
        while keys.count < limit {
            guard let next = try db.first(sql, [.text(lower), .text(upper)], { $0.text(0) }) else { break }
            let rest = next.utf8.dropFirst(low.utf8.count)
            let child = String(decoding: rest.prefix { $0 != 1 }, as: UTF8.self)
            keys.append(child)
            if reverse { upper = low + child } else { lower = low + child + StoreKey.afterSeparator }
        }
        return keys
    }
}

/// Builds a tree from leaves read in path order and zone values grafted in. Where a primitive
/// and deeper content meet (a zone below a primitive of the open zone), the deeper content wins.
private final class Assembly {
    var scalar: JSONValue?
    var children: [String: Assembly] = [:]

    private func node(at segments: [String]) -> Assembly {
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
        return node
    }

    func insert(_ segments: [String], _ value: JSONValue) {
        node(at: segments).scalar = value
    }

    /// Places a whole value (a zone's) at `segments`.
    func graft(_ segments: [String], _ value: JSONValue) {
        let target = node(at: segments)
        switch value {
        case let .object(members):
            for (key, member) in members { target.graft([key], member) }
        case .null:
            break
        default:
            target.scalar = value
        }
    }

    var value: JSONValue {
        if children.isEmpty { return scalar ?? .null }
        var members = [String: JSONValue](minimumCapacity: children.count)
        for (key, child) in children {
            let v = child.value
            if v != .null { members[key] = v }
        }
        return members.isEmpty ? (scalar ?? .null) : .object(members)
    }
}
