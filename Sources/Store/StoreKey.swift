import Tree

/// How paths are spelled in the store's tables: each key preceded by U+0001, a character no key
/// may contain and that sorts below every character a key may contain. Then the rows of a
/// subtree form one contiguous range, and the children of a path appear in bytewise key order
/// (with "/" as the separator, "a!" would sort between "a" and "a/b").
enum StoreKey {
    static let separator: Character = "\u{1}"
    /// The character after the separator, the exclusive upper bound of a subtree's range.
    static let afterSeparator = "\u{2}"

    /// Written byte by byte into a string of the right size: appending a `Character` and then
    /// each segment cost some 3,800 instructions per key, twice for every message stored.
    static func of(_ path: Path) -> String {
        var count = 0
        for segment in path.segments { count += 1 + segment.utf8.count }
        guard count > 0 else { return "" }
        return String(unsafeUninitializedCapacity: count) { buffer in
            var written = 0
            for var segment in path.segments {
                buffer[written] = separatorByte
                written += 1
                segment.withUTF8 { bytes in
                    _ = UnsafeMutableBufferPointer(rebasing: buffer[written..<(written + bytes.count)]).initialize(from: bytes)
                    written += bytes.count
                }
            }
            return written
        }
    }

    /// The key of the parent of the path spelled `key`, cut at its last separator on the key's
    /// bytes in place (no key holds U+0001, so that is where the parent's key ends): building it
    /// again from the parent path, or searching back through a UTF-8 view, cost some 1,000
    /// instructions per message stored. Nil for the root's key.
    static func parentKey(of key: String) -> String? {
        var key = key
        return key.withUTF8 { bytes in
            bytes.lastIndex(of: separatorByte).map { String(decoding: UnsafeBufferPointer(rebasing: bytes[..<$0]), as: UTF8.self) }
        }
    }

    /// `separator` as its one UTF-8 byte.
    static let separatorByte: UInt8 = 1

    static func of(_ zone: Zone) -> String { of(zone.root) }

    static func path(_ key: String) throws -> Path {
        try Path(segments: key.split(separator: separator, omittingEmptySubsequences: true).map(String.init))
    }

    /// The half-open range holding exactly the strict descendants of `key`.
    static func descendants(_ key: String) -> (String, String) {
        (key + String(separator), key + afterSeparator)
    }
}
