#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A validated location in the tree, such as `/rooms/lobby/messages`.
///
/// Paths are built once, validated once and then passed around freely, so
/// every other module can rely on keys being legal and limits being met.
/// Every segment is held in Unicode NFC (`Key.canonical`), whatever spelling
/// it was built from, so canonically equivalent paths are one path, and the
/// limits apply to the NFC form. Equality and hashing compare the UTF-8 bytes
/// of the segments (not Swift's canonical-equivalence string equality),
/// matching how `storageKey` is compared by SQLite; with NFC segments the two
/// agree.
public struct Path: Sendable, CustomStringConvertible {
    /// Largest path, in UTF-8 bytes of the segments joined by "/" (no leading slash).
    public static let maxByteLength = 768
    /// Largest number of segments.
    public static let maxDepth = 32

    /// The keys from the root down; empty for the root.
    public let segments: [String]

    /// The root of the tree.
    public static let root = Path(unchecked: [])

    /// Builds a path from segments that are already known to be valid.
    init(unchecked segments: [String]) {
        self.segments = segments
    }

    /// Parses "/a/b", "a/b", "/a/b/", "/" or "" (the last two are the root).
    /// Empty segments between slashes are skipped; every key is validated and
    /// the length and depth limits are enforced.
    public init(_ string: String) throws(TreeError) {
        var segments: [String] = []
        for piece in string.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: true) {
            segments.append(String(decoding: piece, as: UTF8.self))
        }
        try self.init(segments: segments)
    }

    /// Builds a path from keys, each taken in NFC and validated, and enforces the limits.
    public init(segments: [String]) throws(TreeError) {
        var canonical = segments  // copied only if a key changes
        for (index, key) in segments.enumerated() where try !Key.validateNotingASCII(key) {
            canonical[index] = try Key.canonical(key)
        }
        try Path.checkLimits(depth: canonical.count, byteLength: Path.byteLength(of: canonical))
        self.segments = canonical
    }

    /// Parses the exact form produced by `storageKey`: "" or "/a/b" with no
    /// empty segments. Stricter than `init(_:)` because stored keys must be
    /// canonical (one path, one spelling); keys in another Unicode spelling
    /// are taken in NFC like everywhere else.
    ///
    /// Every record carries its paths in this form, so it is parsed in one pass over the
    /// contiguous UTF-8 rather than through the generic `split`.
    public init(storageKey: String) throws(TreeError) {
        if storageKey.isEmpty {
            self = .root
            return
        }
        var text = storageKey
        // Whether every segment is a plain ASCII key (`Key.isPlainASCII`), checked in the same
        // pass: then none needs checking again or NFC, and the byte length is the text's.
        var plain = true
        let segments = text.withUTF8 { utf8 -> [String]? in
            guard utf8.first == UInt8(ascii: "/") else { return nil }
            var segments: [String] = []
            // One allocation, not one each time the array doubles (a message's path has four).
            var slashes = 0
            for byte in utf8 where byte == UInt8(ascii: "/") { slashes += 1 }
            segments.reserveCapacity(slashes)
            var start = 1
            for end in 1...utf8.count where end == utf8.count || utf8[end] == UInt8(ascii: "/") {
                guard end > start else { return nil }  // an empty segment (or a trailing "/")
                let segment = UnsafeBufferPointer(rebasing: utf8[start..<end])
                if plain { plain = Key.isPlainASCII(segment) }
                segments.append(String(decoding: segment, as: UTF8.self))
                start = end + 1
            }
            return segments
        }
        guard let segments else { throw .invalidStorageKey(storageKey) }
        guard plain else {
            try self.init(segments: segments)
            return
        }
        try Path.checkLimits(depth: segments.count, byteLength: storageKey.utf8.count - 1)
        self.init(unchecked: segments)
    }

    /// Whether this is the root.
    public var isRoot: Bool { segments.isEmpty }

    /// Number of segments (0 for the root).
    public var depth: Int { segments.count }

    /// The last segment, or nil for the root.
    public var key: String? { segments.last }

    /// The enclosing path, or nil for the root.
    public var parent: Path? {
        isRoot ? nil : Path(unchecked: Array(segments.dropLast()))
    }

    /// Size counted against `maxByteLength`: segment bytes plus one "/" between each.
    public var byteLength: Int { Path.byteLength(of: segments) }

    /// The child at `key` (taken in NFC and validated; limits enforced).
    public func appending(_ key: String) throws(TreeError) -> Path {
        Path(unchecked: segments + [try canonicalChildKey(key)])
    }

    /// Whether a child whose key is `keyBytes` long stays within the limits, for decoders that
    /// checked the key's bytes already (`Key.isPlainASCII`); `byteLength` is this path's, worked
    /// out once for all of its children.
    public func admitsChild(keyBytes: Int, byteLength: Int) -> Bool {
        (try? Path.checkLimits(depth: segments.count + 1, byteLength: childByteLength(keyBytes: keyBytes, byteLength: byteLength))) != nil
    }

    /// The byte length of a child of this path (whose own is `byteLength`) with a key of `keyBytes`.
    private func childByteLength(keyBytes: Int, byteLength: Int) -> Int {
        segments.isEmpty ? keyBytes : byteLength + 1 + keyBytes
    }

    /// Checks `key` as `appending(key)` would and returns its NFC spelling, without building
    /// the child: for decoders that only need to know a leaf's path is valid, and need the path
    /// itself only to report an error.
    public func canonicalChildKey(_ key: String) throws(TreeError) -> String {
        let key = try Key.canonical(key)
        try Path.checkLimits(depth: segments.count + 1, byteLength: childByteLength(keyBytes: key.utf8.count, byteLength: byteLength))
        return key
    }

    /// This path followed by `other` (limits enforced).
    public func appending(_ other: Path) throws(TreeError) -> Path {
        let joined = segments + other.segments
        try Path.checkLimits(depth: joined.count, byteLength: Path.byteLength(of: joined))
        return Path(unchecked: joined)
    }

    /// Whether `other` lies strictly below this path.
    public func isAncestor(of other: Path) -> Bool {
        segments.count < other.segments.count && isAncestorOrSelf(of: other)
    }

    /// Whether `other` is this path or lies below it.
    public func isAncestorOrSelf(of other: Path) -> Bool {
        guard segments.count <= other.segments.count else { return false }
        for (mine, theirs) in zip(segments, other.segments) where !Path.sameKey(mine, theirs) {
            return false
        }
        return true
    }

    /// The remainder of this path below `ancestor` (root when equal), or nil
    /// when `ancestor` is not an ancestor-or-self of this path.
    public func relative(to ancestor: Path) -> Path? {
        guard ancestor.isAncestorOrSelf(of: self) else { return nil }
        return Path(unchecked: Array(segments.dropFirst(ancestor.segments.count)))
    }

    /// Every strict ancestor, root first (empty for the root).
    public var ancestors: [Path] {
        (0..<segments.count).map { Path(unchecked: Array(segments.prefix($0))) }
    }

    /// The canonical text used as the SQLite key: "" for the root, "/a/b" otherwise.
    public var storageKey: String {
        segments.isEmpty ? "" : "/" + segments.joined(separator: "/")
    }

    /// "/" for the root, "/a/b" otherwise.
    public var description: String {
        segments.isEmpty ? "/" : storageKey
    }

    // MARK: - Internals

    static func byteLength(of segments: [String]) -> Int {
        guard !segments.isEmpty else { return 0 }
        return segments.reduce(segments.count - 1) { $0 + $1.utf8.count }
    }

    static func checkLimits(depth: Int, byteLength: Int) throws(TreeError) {
        guard depth <= maxDepth else { throw .pathTooDeep }
        guard byteLength <= maxByteLength else { throw .pathTooLong }
    }

    /// Bytewise equality, on the bytes in place where the strings have them contiguous (native
    /// strings do): the generic walk of two UTF-8 views was the costliest step of relating a
    /// record's paths to their zones.
    static func sameKey(_ a: String, _ b: String) -> Bool {
        let same = a.utf8.withContiguousStorageIfAvailable { x in
            b.utf8.withContiguousStorageIfAvailable { y in
                x.count == y.count && (x.isEmpty || memcmp(x.baseAddress!, y.baseAddress!, x.count) == 0)
            }
        }
        if let same = same ?? nil { return same }
        return a.utf8.elementsEqual(b.utf8)
    }
}

extension Path: Hashable {
    /// Byte-wise equality of the segments (see the type's documentation).
    public static func == (lhs: Path, rhs: Path) -> Bool {
        lhs.segments.count == rhs.segments.count
            && zip(lhs.segments, rhs.segments).allSatisfy { sameKey($0, $1) }
    }

    /// Hashes the segments' UTF-8 bytes, consistent with `==`.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(segments.count)
        for segment in segments {
            hasher.combine(segment.utf8.count)
            for byte in segment.utf8 { hasher.combine(byte) }
        }
    }
}

extension Path: Comparable {
    /// Orders paths by the UTF-8 bytes of their `storageKey`, which is the
    /// order SQLite's default (BINARY) collation gives the stored rows.
    public static func < (lhs: Path, rhs: Path) -> Bool {
        lhs.storageKey.utf8.lexicographicallyPrecedes(rhs.storageKey.utf8)
    }
}
