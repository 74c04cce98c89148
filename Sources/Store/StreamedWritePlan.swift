import Crypto
import Glibc
import SQLite
import Tree
import Wire

/// One streamed write on its way to a content: the body's members in a scratch SQLite file,
/// sorted there, never all in memory.
///
/// Every member of the body is a row of `entry`: the pair it belongs to (its path's storage
/// key), its place in that pair's value (the CBOR text encodings of its keys, one after the
/// other, in NFC) and what it is (null, an object or array, or a leaf with its canonical
/// CBOR). Sorted by pair and place, the rows are the content's items in the order canonical
/// CBOR wants (a map's keys by their encodings; encoded keys are prefix-free, so a parent's
/// place sorts just before its members'). A map's count must precede its members: one pass
/// (`prepare`) counts the non-empty members of every object into `size`, the next (`emit`)
/// writes the content. A repeated key is a row written twice, which the primary key refuses.
final class StreamedWritePlan {
    enum Kind { case set, update }

    private enum Entry: Int64 {
        case null = 0
        case container = 1
        case leaf = 2
    }

    /// The largest body a streamed write reads: Firebase's limit for one REST write.
    static let maxBodyBytes = 256 * 1024 * 1024

    let kind: Kind
    let target: Path
    unowned let store: Store
    let author: PublicKey
    let nowMillis: UInt64
    private let file: String
    private let db: Connection

    /// The first error the tree's rules find (a key, a path too long, a server value): thrown
    /// once the whole body has been read, so that invalid JSON anywhere wins as it does when
    /// the body is parsed whole.
    private var ruleError: (any Error)?
    /// The top-level members of a PATCH body.
    private var members = 0
    /// A PATCH whose body is not an object.
    private var notAnObject = false
    /// Two PATCH members wrote the same zone root: their paths overlap (or a key repeats).
    private var overlap = false
    /// Pairs and bytes of the content, known after `prepare`.
    private var pairCount = 0
    private var contentSize = 0
    /// A pair in a private conversation, if any.
    private var privatePath: Path?

    init(kind: Kind, target: Path, store: Store, author: PublicKey, nowMillis: UInt64, directory: String) throws {
        self.kind = kind
        self.target = target
        self.store = store
        self.author = author
        self.nowMillis = nowMillis
        _ = mkdir(directory, 0o700)
        var random = SecureRandom()
        let name = (0..<12).map { _ in String(random.next() % 36, radix: 36) }.joined()
        file = directory + "/write-" + name + ".sqlite"
        db = try Connection(path: file)
        // Scratch data: nothing to recover after a crash (leftovers are removed at start).
        try db.execute("PRAGMA journal_mode = OFF")
        try db.execute("PRAGMA synchronous = OFF")
        try db.execute("PRAGMA cache_size = -8192")
        try db.execute("PRAGMA temp_store = FILE")
        try db.execute("""
            CREATE TABLE entry(pair BLOB NOT NULL, place BLOB NOT NULL, kind INTEGER NOT NULL, leaf BLOB,
                               PRIMARY KEY (pair, place)) WITHOUT ROWID;
            CREATE TABLE pair(pair BLOB PRIMARY KEY, always INTEGER NOT NULL, full INTEGER NOT NULL DEFAULT 0,
                              bytes INTEGER NOT NULL DEFAULT 0) WITHOUT ROWID;
            CREATE TABLE main(pair BLOB PRIMARY KEY) WITHOUT ROWID;
            CREATE TABLE rawkey(key BLOB PRIMARY KEY) WITHOUT ROWID;
            CREATE TABLE size(pair BLOB NOT NULL, place BLOB NOT NULL, n INTEGER NOT NULL, PRIMARY KEY (pair, place)) WITHOUT ROWID;
            """)
        try db.execute("BEGIN")
    }

    deinit {
        unlink(file)
        unlink(file + "-journal")
    }

    // MARK: - Places

    /// Where a value goes: its pair, its place in the pair's value, and its path.
    struct Position {
        /// 01 then the pair path's storage key (01 keeps the root's key from being empty).
        var pair: [UInt8]
        /// 01 then the encodings of the keys below the pair path.
        var place: [UInt8]
        /// The absolute path's keys.
        var segments: [String]
        var byteLength: Int
        /// Depth and length against which a null member's path is checked: from the value's
        /// root for a set (`normalized()`), absolute for an update (`normalized(at:)`).
        var looseDepth: Int
        var looseLength: Int
        /// Whether a zone root below starts a pair of its own (the pair is in the open zone
        /// and may hold zones).
        var splits: Bool
    }

    static func pairKey(_ path: Path) -> [UInt8] { [1] + Array(path.storageKey.utf8) }

    private func root(of path: Path) -> Position {
        Position(pair: Self.pairKey(path), place: [1], segments: path.segments, byteLength: path.byteLength,
                 looseDepth: kind == .set ? 0 : path.depth, looseLength: kind == .set ? 0 : path.byteLength,
                 splits: Zone.of(path) == .open && Zone.mayHoldZones(path.segments))
    }

    /// The position of the member `key` (raw) of the container at `parent`, checked as the
    /// in-memory writes check it: a null member's key and (loose) path limits, another's key
    /// and absolute path limits.
    private func child(of parent: Position, key: String, isNull: Bool) throws -> Position {
        let canonical = try Key.canonical(key)
        let length = canonical.utf8.count
        let byteLength = parent.segments.isEmpty ? length : parent.byteLength + 1 + length
        let looseLength = parent.looseDepth == 0 ? length : parent.looseLength + 1 + length
        if isNull {
            guard parent.looseDepth + 1 <= Path.maxDepth else { throw TreeError.pathTooDeep }
            guard looseLength <= Path.maxByteLength else { throw TreeError.pathTooLong }
        } else {
            guard parent.segments.count + 1 <= Path.maxDepth else { throw TreeError.pathTooDeep }
            guard byteLength <= Path.maxByteLength else { throw TreeError.pathTooLong }
        }
        var position = parent
        position.segments.append(canonical)
        position.byteLength = byteLength
        position.looseDepth += 1
        position.looseLength = looseLength
        if parent.splits, Zone.isRoot(position.segments) {
            let path = try Path(segments: position.segments)
            position.pair = Self.pairKey(path)
            position.place = [1]
            position.splits = false
            try db.run("INSERT OR IGNORE INTO pair(pair, always) VALUES (?, 0)", [.blob(position.pair)])
        } else {
            position.place += CBOR.text(canonical).encoded()
            position.splits = parent.splits && Zone.mayHoldZones(position.segments)
        }
        return position
    }

    /// Records the value at `position`; a place written twice is a repeated key.
    private func put(_ position: Position, _ row: Entry, leaf: [UInt8]? = nil) throws {
        try db.run("INSERT OR IGNORE INTO entry(pair, place, kind, leaf) VALUES (?, ?, ?, ?)",
                   [.blob(position.pair), .blob(position.place), .integer(row.rawValue), leaf.map { .blob($0) } ?? .null])
        guard db.changes == 1 else {
            // The root of a pair written twice in an update: two members overlap, which the
            // update's own checks name (after the whole body is read).
            if kind == .update, position.place == [1] { overlap = true; return }
            throw JSONError.duplicateKey(offset: 0, key: position.segments.last ?? "")
        }
    }

    private func noteRuleError(_ error: any Error) {
        if ruleError == nil { ruleError = error }
    }

    // MARK: - Reading the body

    /// Reads the whole document from `source`. JSON errors are thrown at once; a rule broken
    /// is kept and thrown after the document was read to its end.
    func read(_ source: @escaping () throws -> ArraySlice<UInt8>?) throws {
        var reader = JSONStreamReader(limits: JSONLimits(maxBytes: Self.maxBodyBytes), source: source)
        guard let first = try reader.next() else { return }
        switch kind {
        case .set:
            try db.run("INSERT INTO pair(pair, always) VALUES (?, 1)", [.blob(Self.pairKey(target))])
            try db.run("INSERT INTO main(pair) VALUES (?)", [.blob(Self.pairKey(target))])
            try readValue(&reader, first, at: root(of: target))
            try reader.skipToEnd()
        case .update:
            guard first == .objectStart else {
                notAnObject = true
                try reader.skipToEnd()
                return
            }
            while let event = try reader.next() {
                guard case let .key(key) = event else { break }  // the body's end
                members += 1
                // A key repeated exactly (up to canonical equivalence) is invalid JSON.
                try db.run("INSERT OR IGNORE INTO rawkey(key) VALUES (?)", [.blob(Array(CanonicalText.nfc(key).utf8))])
                guard db.changes == 1 else { throw JSONError.duplicateKey(offset: 0, key: key) }
                guard let value = try reader.next() else { break }
                guard ruleError == nil else {
                    try skipValue(&reader, value)
                    continue
                }
                let path: Path
                do {
                    path = try target.appending(Path(key))
                    try db.run("INSERT OR IGNORE INTO main(pair) VALUES (?)", [.blob(Self.pairKey(path))])
                    if db.changes == 0 { throw TreeError.invalidUpdate("\"\(key)\" names the same path as another key") }
                    try db.run("INSERT INTO pair(pair, always) VALUES (?, 1) ON CONFLICT(pair) DO UPDATE SET always = 1",
                               [.blob(Self.pairKey(path))])
                } catch let error as TreeError {
                    noteRuleError(error)
                    try skipValue(&reader, value)
                    continue
                }
                try readValue(&reader, value, at: root(of: path))
            }
            try reader.skipToEnd()
        }
    }

    /// Reads the rest of a value whose first event is `first`, recording nothing.
    private func skipValue(_ reader: inout JSONStreamReader, _ first: JSONStreamEvent) throws {
        var depth = 0
        var event = first
        while true {
            switch event {
            case .objectStart, .arrayStart: depth += 1
            case .objectEnd, .arrayEnd: depth -= 1
            case .key, .scalar: break
            }
            if depth == 0 { return }
            guard let next = try reader.next() else { return }
            event = next
        }
    }

    /// An open object or array of the value being read.
    private struct Frame {
        var position: Position
        var isArray: Bool
        var index = 0
        /// An object's row waits for its first key: `{".sv": ...}` is a leaf, not an object.
        var rowPending: Bool
        var keys = 0
        /// The key whose value comes next.
        var key: String?
        /// A server value placeholder: its spec once read.
        var serverValue: JSONValue?
    }

    /// Reads one value (the body's, or a PATCH member's) from its first event `first`.
    private func readValue(_ reader: inout JSONStreamReader, _ first: JSONStreamEvent, at start: Position) throws {
        var frames = [Frame]()
        var event = first
        while true {
            do {
                try step(&reader, event, &frames, start)
            } catch let error as TreeError {
                // The rest of this value is only checked for JSON errors.
                noteRuleError(error)
                if event == .objectStart || event == .arrayStart {  // opened, not yet a frame
                    try skipValue(&reader, event)
                }
                for _ in frames { try skipValue(&reader, .objectStart) }
                return
            }
            if frames.isEmpty { return }
            guard let next = try reader.next() else { return }
            event = next
        }
    }

    /// Takes one event of a value.
    private func step(_ reader: inout JSONStreamReader, _ event: JSONStreamEvent, _ frames: inout [Frame], _ start: Position) throws {
        // Where a value event goes, and whether it is a null member.
        func position(isNull: Bool) throws -> Position {
            guard let top = frames.last else { return start }
            if top.isArray {
                frames[frames.count - 1].index += 1
                return try child(of: top.position, key: String(top.index), isNull: isNull)
            }
            return try child(of: top.position, key: top.key ?? "", isNull: isNull)
        }
        switch event {
        case let .scalar(value):
            let at = try position(isNull: value == .null)
            if value == .null {
                try put(at, Entry.null)
            } else {
                try put(at, .leaf, leaf: TreeValueCodec.encode(value).encoded())
            }
        case .arrayStart:
            let at = try position(isNull: false)
            try put(at, .container)
            frames.append(Frame(position: at, isArray: true, rowPending: false))
        case .objectStart:
            let at = try position(isNull: false)
            frames.append(Frame(position: at, isArray: false, rowPending: true))
        case let .key(key):
            let top = frames.count - 1
            frames[top].keys += 1
            if key == ".sv" || frames[top].serverValue != nil {
                guard frames[top].keys == 1, key == ".sv" else { throw TreeError.invalidServerValue }
                frames[top].serverValue = try readSmallValue(&reader)
                return
            }
            if frames[top].rowPending {
                try put(frames[top].position, .container)
                frames[top].rowPending = false
            }
            frames[top].key = key
        case .objectEnd:
            let frame = frames.removeLast()
            if let spec = frame.serverValue {
                let path = try Path(segments: frame.position.segments)
                var failedRead: (any Error)?
                let resolved = try JSONValue.object([".sv": spec])
                    .resolvingServerValues(at: path, nowMillis: Double(nowMillis)) { store.currentValue(at: $0, failure: &failedRead) }
                if let failedRead { throw failedRead }
                try put(frame.position, .leaf, leaf: TreeValueCodec.encode(resolved.normalized()).encoded())
            } else if frame.rowPending {
                try put(frame.position, .container)  // {}: vanishes
            }
        case .arrayEnd:
            frames.removeLast()
        }
    }

    /// A server value's spec, read whole: it is small when valid, and one too large to be
    /// valid is refused as the in-memory resolver refuses it, once read to its end.
    private func readSmallValue(_ reader: inout JSONStreamReader) throws -> JSONValue {
        var builder = JSONValueBuilder()
        var events = 0
        while let event = try reader.next() {
            events += 1
            let value = builder.take(event)
            if events > 1024 {
                for _ in 0..<builder.depth { try skipValue(&reader, .objectStart) }
                throw TreeError.invalidServerValue
            }
            if let value { return value }
        }
        throw JSONError.unexpectedEnd(offset: 0, expected: "a value")
    }

    // MARK: - Checking and counting

    /// After the body was read: the update's checks, the zones the write clears, the count of
    /// every object's members, the permission of every pair, the limits of a large write.
    func prepare() throws {
        if notAnObject { throw StreamedWriteError.notAnObject }
        if members > LargeWrite.maxPairs {
            throw RecordError.invalidBody("\(members) pairs exceed the limit of \(LargeWrite.maxPairs)")
        }
        if let ruleError { throw ruleError }
        let mains = try db.all("SELECT pair FROM main ORDER BY pair", []) { $0.blob(0) }
        if kind == .update {
            guard !mains.isEmpty else { throw TreeError.invalidUpdate("the body is empty") }
            for key in mains {
                let path = try Path(storageKey: String(decoding: key.dropFirst(), as: UTF8.self))
                for ancestor in path.ancestors
                where try db.scalarInt("SELECT count(*) FROM main WHERE pair = ?", [.blob(Self.pairKey(ancestor))]) == 1 {
                    throw TreeError.invalidUpdate("\"\(ancestor.relative(to: target) ?? ancestor)\" is an ancestor of \"\(path.relative(to: target) ?? path)\"")
                }
            }
            if overlap { throw JSONError.duplicateKey(offset: 0, key: "") }
        }
        for key in mains {
            let path = try Path(storageKey: String(decoding: key.dropFirst(), as: UTF8.self))
            if LivePaths.isLive(path) { throw StreamedWriteError.livePath(path.description) }
            guard Zone.of(path) == .open, Zone.mayHoldZones(path.segments) else { continue }
            for zone in try store.ownedZones(below: path, author: author) {
                try db.run("INSERT INTO pair(pair, always) VALUES (?, 1) ON CONFLICT(pair) DO UPDATE SET always = 1",
                           [.blob(Self.pairKey(zone))])
            }
        }
        try count()
        pairCount = Int(try db.scalarInt("SELECT count(*) FROM pair WHERE always = 1 OR full = 1") ?? 0)
        var size = Self.headLength(pairCount)
        try db.query("SELECT pair, full, bytes FROM pair WHERE always = 1 OR full = 1 ORDER BY pair") { row in
            let key = row.blob(0)
            let text = key.count - 1
            size += 1 + Self.headLength(text) + text + (row.int(1) == 1 ? row.int(2) : 1)
            let path = try Path(storageKey: String(decoding: key.dropFirst(), as: UTF8.self))
            try store.checkPermission(WritePair(path: path, value: try standIn(key, path: path, full: row.int(1) == 1)), author: author)
            if Store.privateConversation(of: path) != nil, privatePath == nil { privatePath = path }
        }
        contentSize = size
    }

    /// The rules of a large write's content that `LargeWriteContent.check` enforces on the
    /// in-memory writes' pairs: the count of pairs, no pair at or below another but across a
    /// zone's root (`Zone.pairsMayNest`), and the content's size.
    func checkLarge() throws {
        // A write into a private conversation is sealed (Protocol.md §11.4), which a large
        // write made here never is; a small one goes through `Store.write`, which seals it.
        if let privatePath { throw StoreError.permissionDenied(path: privatePath.description) }
        guard pairCount <= LargeWrite.maxPairs else {
            throw RecordError.invalidBody("\(pairCount) pairs exceed the limit of \(LargeWrite.maxPairs)")
        }
        if pairCount > 1 {
            try db.query("SELECT pair FROM pair WHERE always = 1 OR full = 1 ORDER BY pair") { row in
                let path = try Path(storageKey: String(decoding: row.blob(0).dropFirst(), as: UTF8.self))
                for ancestor in path.ancestors where try !Zone.pairsMayNest(ancestor, above: path) && db.scalarInt(
                    "SELECT count(*) FROM pair WHERE pair = ? AND (always = 1 OR full = 1)", [.blob(Self.pairKey(ancestor))]) == 1 {
                    throw RecordError.invalidBody("\(ancestor) is an ancestor of \(path) in the same zone of the write")
                }
            }
        }
        guard contentSize <= Int(LargeWrite.maxSize) else {
            throw RecordError.tooLarge(size: contentSize, limit: Int(LargeWrite.maxSize))
        }
    }

    /// What the write rules look at of a pair's value (its `senderId` under a message), as a
    /// small value standing for it.
    private func standIn(_ key: [UInt8], path: Path, full: Bool) throws -> JSONValue {
        guard case .message = Zone.of(path), full else { return .null }
        guard let root = try db.first("SELECT kind, leaf FROM entry WHERE pair = ? AND place = ?", [.blob(key), .blob([1])], {
            (Entry(rawValue: $0.int64(0)) ?? .null, $0.isNull(1) ? [] : $0.blob(1))
        }) else { return .null }
        let uid = CBOR.text(author.userID).encoded()
        if root.0 == .leaf { return root.1 == uid ? .string(author.userID) : .bool(false) }
        let sender = try db.first("SELECT kind, leaf FROM entry WHERE pair = ? AND place = ?",
                                  [.blob(key), .blob([1] + CBOR.text("senderId").encoded())]) {
            (Entry(rawValue: $0.int64(0)) ?? .null, $0.isNull(1) ? [] : $0.blob(1))
        }
        switch sender {
        case let .some((.leaf, bytes)): return .object(["senderId": bytes == uid ? .string(author.userID) : .bool(false)])
        case .some((.container, _)): return .object(["senderId": .object(["x": .bool(true)])])
        default: return .object(["x": .bool(true)])
        }
    }

    /// The first pass over the sorted rows: counts every object's non-empty members (into
    /// `size`), marks the pairs whose value is not empty, and adds up each pair's bytes.
    private func count() throws {
        var currentPair: [UInt8]?
        var open = [(place: [UInt8], count: Int, keyLength: Int)]()
        var bytes = 0
        var full = false
        func close() throws {
            let frame = open.removeLast()
            guard frame.count > 0 else { return }
            try db.run("INSERT INTO size(pair, place, n) VALUES (?, ?, ?)",
                       [.blob(currentPair!), .blob(frame.place), .integer(Int64(frame.count))])
            bytes += frame.keyLength + Self.headLength(frame.count)
            if open.isEmpty { full = true } else { open[open.count - 1].count += 1 }
        }
        func finishPair() throws {
            while !open.isEmpty { try close() }
            if let currentPair, full {
                try db.run("UPDATE pair SET full = 1, bytes = ? WHERE pair = ?", [.integer(Int64(bytes)), .blob(currentPair)])
            }
            bytes = 0
            full = false
        }
        let rows = try db.prepare("SELECT pair, place, kind, length(leaf) FROM entry ORDER BY pair, place")
        while try rows.step() {
            let pair = rows.blob(0)
            if pair != currentPair {
                try finishPair()
                currentPair = pair
            }
            let place = rows.blob(1)
            while let top = open.last, !(place.count > top.place.count && place.starts(with: top.place)) { try close() }
            let keyLength = place.count - Self.lastKeyStart(place)
            switch Entry(rawValue: rows.int64(2)) ?? .null {
            case .null:
                continue
            case .leaf:
                bytes += keyLength + rows.int(3)
                if open.isEmpty { full = true } else { open[open.count - 1].count += 1 }
            case .container:
                open.append((place, 0, keyLength))
            }
        }
        try finishPair()
    }

    // MARK: - The content

    /// The pairs, when they are few and small enough for one record: decoded from the
    /// content, to be written as the in-memory writes would (`Store.write`).
    func smallPairs() throws -> [WritePair]? {
        guard pairCount <= RecordLimits.maxPairs, contentSize <= RecordLimits.maxRecordBytes else { return nil }
        var content = [UInt8]()
        try emit { content.append(contentsOf: $0) }
        var pairs = [WritePair]()
        try LargeWriteContent.forEachPair(in: content[...]) { pair, _ in pairs.append(pair) }
        return pairs
    }

    /// Writes the content, in order, a few bytes at a time to `sink`.
    func emit(_ sink: ([UInt8]) throws -> Void) throws {
        var out = [UInt8]()
        out.reserveCapacity(1 << 16)
        func flush() throws {
            if out.count >= 1 << 16 {
                try sink(out)
                out.removeAll(keepingCapacity: true)
            }
        }
        Self.writeHead(4, pairCount, into: &out)
        let pairs = try db.prepare("SELECT pair, full FROM pair WHERE always = 1 OR full = 1 ORDER BY pair")
        let rows = try db.prepare("""
            SELECT entry.place, entry.kind, entry.leaf, size.n FROM entry
            LEFT JOIN size ON size.pair = entry.pair AND size.place = entry.place
            WHERE entry.pair = ? ORDER BY entry.place
            """)
        while try pairs.step() {
            let key = pairs.blob(0)
            out.append(0x82)
            CBOR.text(String(decoding: key.dropFirst(), as: UTF8.self)).encode(into: &out)
            guard pairs.int(1) == 1 else {
                out.append(0xF6)
                try flush()
                continue
            }
            rows.reset()
            try rows.bind([.blob(key)])
            while try rows.step() {
                guard let kind = Entry(rawValue: rows.int64(1)), kind != .null else { continue }
                if kind == .container, rows.isNull(3) { continue }  // an empty object or array vanishes
                let place = rows.blob(0)
                out.append(contentsOf: place[Self.lastKeyStart(place)...])
                if kind == .container {
                    Self.writeHead(5, rows.int(3), into: &out)
                } else {
                    out.append(contentsOf: rows.blob(2))
                }
                try flush()
            }
            try flush()
        }
        if !out.isEmpty { try sink(out) }
    }

    // MARK: - Encodings

    /// Bytes of a CBOR head with argument `n`.
    static func headLength(_ n: Int) -> Int {
        switch n {
        case 0..<24: return 1
        case 24...0xFF: return 2
        case 0x100...0xFFFF: return 3
        case 0x1_0000...0xFFFF_FFFF: return 5
        default: return 9
        }
    }

    /// Appends a CBOR head of major type `major` with argument `n`, in its shortest form.
    static func writeHead(_ major: UInt8, _ n: Int, into out: inout [UInt8]) {
        let m = major << 5
        let length = headLength(n)
        if length == 1 {
            out.append(m | UInt8(n))
            return
        }
        out.append(m | [2: 24, 3: 25, 5: 26, 9: 27][length]!)
        for i in stride(from: length - 2, through: 0, by: -1) { out.append(UInt8(truncatingIfNeeded: n >> (8 * i))) }
    }

    /// Where the last key's encoding starts in a place (its length when the place is a pair's
    /// root, which has no key).
    static func lastKeyStart(_ place: [UInt8]) -> Int {
        var index = 1
        var last = place.count
        while index < place.count {
            last = index
            let head = place[index] & 0x1F
            var length = 0
            var headBytes = 1
            switch head {
            case 0..<24: length = Int(head)
            case 24: length = Int(place[index + 1]); headBytes = 2
            case 25: length = Int(place[index + 1]) << 8 | Int(place[index + 2]); headBytes = 3
            default: length = (1...4).reduce(0) { $0 << 8 | Int(place[index + $1]) }; headBytes = 5
            }
            index += headBytes + length
        }
        return last
    }
}

