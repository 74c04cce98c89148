import SQLite
import Tree

/// The tree as it was at one moment, read on a connection of its own inside one read
/// transaction, so that a large read can be written out a piece at a time while the store's own
/// connection goes on applying writes (SQLite's WAL keeps the snapshot's pages until it ends).
///
/// Used by one thread at a time, like the store: opened on the store's (so that it is taken at a
/// known point among the store's writes), then handed to whoever reads it. Close it (or let it
/// go) as soon as the read is done: while it is open, checkpoints cannot pass it and the WAL grows.
public final class TreeSnapshot {
    let db: Connection
    private var open = true

    /// Opens a snapshot of `store`'s tree as of now; nil for a store held in memory, which no
    /// second connection can see.
    public static func open(_ store: Store) throws -> TreeSnapshot? {
        guard store.path != ":memory:", !store.path.isEmpty else { return nil }
        return try TreeSnapshot(path: store.path)
    }

    private init(path: String) throws {
        db = try Connection(path: path, readOnly: true, create: false)
        // A small cache: a snapshot reads each page about once, and its memory is what a large
        // read must keep small.
        try db.execute("PRAGMA cache_size = -1024; PRAGMA temp_store = MEMORY")
        try db.execute("BEGIN DEFERRED")
        // The snapshot starts with the first read, not with BEGIN.
        _ = try db.scalarInt("SELECT count(*) FROM meta WHERE key = 'clock'")
    }

    deinit { close() }

    /// Ends the read transaction, letting checkpoints pass the snapshot's point again.
    public func close() {
        guard open else { return }
        open = false
        try? db.execute("ROLLBACK")
    }

    /// The value at `path` in the snapshot, whole.
    public func value(at path: Path) throws -> JSONValue {
        try TreeReader(db: db).value(at: path)
    }

    /// Whether the value at `path` is large enough to be written out a piece at a time
    /// (`Store.isLargeValue(at:)`), in the snapshot.
    public func isLarge(_ path: Path, rows: Int = TreeStream.wholeReadRows) throws -> Bool {
        try TreeReader(db: db).isLarge(path, rows: rows)
    }

    /// The value at `path` as compact JSON (`JSONValue.serialized()`, byte for byte), produced a
    /// piece at a time.
    /// `live`, when given, is the live layer to show over the stored tree (`LivePaths.overlay`):
    /// the live values at or around `path`, taken with the snapshot.
    public func stream(_ path: Path, wholeReadRows: Int = TreeStream.wholeReadRows, live: [(Path, JSONValue)]? = nil) -> TreeStream {
        TreeStream(reader: TreeReader(db: db), root: path, wholeReadRows: wholeReadRows, live: live)
    }
}

/// The compact JSON of a subtree, written while it is read: each call of `next` reads a bounded
/// part of the tree and returns its text, so memory stays bounded by the largest piece, not by
/// the subtree.
///
/// The text is exactly `JSONValue.serialized()` of the value (keys in Firebase key order,
/// array-like objects as arrays). To know a location's keys and whether it renders as an array
/// before writing it, the stream reads its child keys (skip scans, no values): memory grows with
/// the number of children of the locations on the path being written, never with their content.
/// A location with few rows below it (`wholeReadRows`), and every zone (a message, a profile),
/// is read whole and written at once.
public final class TreeStream {
    /// Rows (leaves or zones) at or below a location up to which it is read whole.
    public static let wholeReadRows = 256

    private let reader: TreeReader
    private var pending: [Frame]
    private var finished = false

    private enum Frame {
        /// A value still to be written (the root, at first).
        case value(Path)
        /// An object's members from `index` on.
        case object(Path, keys: [String], index: Int)
        /// An array-like object's items from `index` on.
        case array(Path, present: Set<String>, length: Int, index: Int)
    }

    /// Rows at or below a location up to which this stream reads it whole.
    private let wholeReadRows: Int

    /// The live values shown over the stored tree (Protocol.md §5.7), nil for none. They are few
    /// (bounded per author and in all), so each location the stream writes merges those below
    /// it: a location read whole gets `LivePaths.overlay`, an opened one gets the keys of its
    /// live children too, and a child inside a live subtree shows the live values alone.
    private let live: [(Path, JSONValue)]?

    init(reader: TreeReader, root: Path, wholeReadRows: Int, live: [(Path, JSONValue)]? = nil) {
        self.reader = reader
        self.wholeReadRows = wholeReadRows
        self.live = live
        pending = [.value(root)]
    }

    /// The next piece of text, at least about `size` bytes unless the end comes first; nil once
    /// everything was returned.
    public func next(size: Int = 1 << 16) throws -> [UInt8]? {
        guard !finished else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(size + 1024)
        while out.count < size, let frame = pending.popLast() {
            switch frame {
            case .value(let path):
                try write(path, into: &out)
            case .object(let path, let keys, let index):
                if index == keys.count {
                    out.append(UInt8(ascii: "}"))
                    continue
                }
                pending.append(.object(path, keys: keys, index: index + 1))
                if index > 0 { out.append(UInt8(ascii: ",")) }
                out += JSONValue.string(keys[index]).serialized().utf8
                out.append(UInt8(ascii: ":"))
                try write(path.appending(keys[index]), into: &out)
            case .array(let path, let present, let length, let index):
                if index == length {
                    out.append(UInt8(ascii: "]"))
                    continue
                }
                pending.append(.array(path, present: present, length: length, index: index + 1))
                if index > 0 { out.append(UInt8(ascii: ",")) }
                let key = String(index)
                if present.contains(key) {
                    try write(path.appending(key), into: &out)
                } else {
                    out += "null".utf8
                }
            }
        }
        if pending.isEmpty { finished = true }
        return out.isEmpty && finished ? nil : out
    }

    /// Writes the value at `path` whole when it is small or a zone's; otherwise opens it and
    /// leaves its children for the next steps.
    private func write(_ path: Path, into out: inout [UInt8]) throws {
        let overlaid = live != nil && LivePaths.touches(path)
        if overlaid, let live, LivePaths.isWhollyLive(path) {
            out += LivePaths.overlay(.null, at: path, entries: live).serialized().utf8
            return
        }
        let large = try Zone.of(path) == .open && isLarge(path)
        var keys = large ? try reader.childKeys(of: path) : []
        if overlaid, !keys.isEmpty { keys = try withLiveChildren(keys, at: path) }
        guard !keys.isEmpty else {
            let stored = try reader.value(at: path)
            out += (overlaid ? LivePaths.overlay(stored, at: path, entries: live ?? []) : stored).serialized().utf8
            return
        }
        var members: [String: JSONValue] = [:]
        for key in keys { members[key] = .bool(true) }
        if let length = JSONValue.arrayLength(of: members) {
            out.append(UInt8(ascii: "["))
            pending.append(.array(path, present: Set(keys), length: length, index: 0))
        } else {
            out.append(UInt8(ascii: "{"))
            pending.append(.object(path, keys: FirebaseOrder.sortedKeys(keys), index: 0))
        }
    }

    /// The keys an opened location shows: its stored children's, those of the live values below
    /// it, less the children inside a live subtree where no live value is (a record's value
    /// there is hidden, §5.7).
    private func withLiveChildren(_ keys: [String], at path: Path) throws -> [String] {
        guard let live else { return keys }
        var shown = Set(keys)
        for (entryPath, value) in live where value != .null {
            if let key = entryPath.relative(to: path)?.segments.first { shown.insert(key) }
        }
        return try shown.filter { key in
            let child = try path.appending(key)
            return !LivePaths.isWhollyLive(child) || LivePaths.overlay(.null, at: child, entries: live) != .null
        }
    }

    private func isLarge(_ path: Path) throws -> Bool {
        try reader.isLarge(path, rows: wholeReadRows)
    }
}
