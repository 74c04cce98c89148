import Tree

/// How paths are spelled in the store's tables: each key preceded by U+0001, a character no key
/// may contain and that sorts below every character a key may contain. Then the rows of a
/// subtree form one contiguous range, and the children of a path appear in bytewise key order
/// (with "/" as the separator, "a!" would sort between "a" and "a/b").
enum StoreKey {
    static let separator: Character = "\u{1}"
    /// The character after the separator, the exclusive upper bound of a subtree's range.
    static let afterSeparator = "\u{2}"

    static func of(_ path: Path) -> String {
        var key = ""
        for segment in path.segments {
            key.append(separator)
            key += segment
        }
        return key
    }

    static func of(_ zone: Zone) -> String { of(zone.root) }

    static func path(_ key: String) throws -> Path {
        try Path(segments: key.split(separator: separator, omittingEmptySubsequences: true).map(String.init))
    }

    /// The half-open range holding exactly the strict descendants of `key`.
    static func descendants(_ key: String) -> (String, String) {
        (key + String(separator), key + afterSeparator)
    }
}
