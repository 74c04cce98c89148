import SQLite
import Tree

/// The users directory: one row per profile in the tree (`/users/$uid`), indexed for
/// accent-insensitive substring search in name order.
///
/// Tables (migration 2):
/// - `users`: the profile fields shown in results, `folded` (the folded full name "first last")
///   and `folded_email` (the folded email, spaces removed), and `name_sort`, the user's
///   **order label**: an integer whose order is the directory order, `(folded, uid)` bytewise.
///   Labels are sparse (new users take a label between their neighbours'); when two neighbours
///   leave no room, a window of nearby users is spread out again (`relabel`).
/// - `users_fts`: FTS5, trigram tokenizer, contentless, one document per user whose rowid is the
///   order label and whose text is `" " + folded + U+0002 + folded_email`. A phrase query for a
///   folded query of three or more characters finds the substring matches; for `" " + query`
///   it finds the matches at the start of a word of the name. Because the rowid is the order
///   label, `ORDER BY rowid LIMIT n` returns the first n matches in name order straight from the
///   index: the cost follows n, not the number of matches (a one-letter query matches most users).
/// - `users_short`: FTS5 the same way (contentless, detail=none since it only ever answers
///   single-token queries) over the same text with U+0001 between all characters. Its trigrams are
///   then exactly the text's characters (`\1x\1`) and pairs of characters (`x\1y`), so it answers
///   the one- and two-character queries the trigram index cannot, in name order too.
///
/// Contentless FTS5 tables can only delete a document given the exact text indexed, which is
/// rebuilt from `folded` and `folded_email`; so if folding ever changes, a migration must rebuild
/// the directory (`rebuild`), which also reindexes every user.
///
/// The directory changes only through `refresh(uid:profile:)`, which `Store.apply` calls with the
/// profile as the tree has it after a record's pairs in that profile are applied, in the same
/// transaction; and through `Store.buildUserDirectoryIfNeeded`, which fills it from the tree once
/// after migration 2 (the migration itself only creates the tables: it has a bare connection,
/// and reading profiles goes through the store's tree reader, whatever the tree's layout). A
/// store without records at migration time has nothing to fill in and is marked built at once.
struct UserDirectory {
    let db: Connection

    static let schema = """
        CREATE TABLE users (
            uid TEXT PRIMARY KEY,
            first_name TEXT,
            last_name TEXT,
            email TEXT,
            platform TEXT,
            picture TEXT,
            folded TEXT NOT NULL,
            folded_email TEXT NOT NULL,
            name_sort INTEGER NOT NULL UNIQUE
        ) STRICT, WITHOUT ROWID;
        CREATE INDEX users_by_name ON users(folded, uid);
        CREATE VIRTUAL TABLE users_fts USING fts5(text, content='', columnsize=0, tokenize='trigram case_sensitive 1');
        CREATE VIRTUAL TABLE users_short USING fts5(grams, content='', columnsize=0, detail=none, tokenize='trigram case_sensitive 1');
        INSERT OR REPLACE INTO meta(key, value) VALUES ('directory_built', NOT EXISTS (SELECT 1 FROM records));
        """

    /// Labels lie in 1...labelMax.
    static let labelMax: Int64 = 1 << 62
    /// The gap left after the last (or before the first) user, so that names arriving in order
    /// do not use up the label space.
    static let endSpacing: Int64 = 1 << 32
    /// A relabelled window must leave at least this gap between neighbours.
    static let minimumGap: Int64 = 1 << 10

    /// The fields of a profile the directory shows; nil when absent or not a string.
    struct Profile {
        var firstName: String?
        var lastName: String?
        var email: String?
        var platform: String?
        var picture: String?

        /// The fields of a profile value; nil when it is not an object (absent, or a primitive).
        init?(_ value: JSONValue) {
            guard case let .object(members) = value else { return nil }
            func field(_ name: String) -> String? {
                if case let .string(text)? = members[name] { return text }
                return nil
            }
            self.init(firstName: field("first_name"), lastName: field("last_name"), email: field("email"),
                      platform: field("platform"), picture: field("picture"))
        }

        init(firstName: String?, lastName: String?, email: String?, platform: String?, picture: String?) {
            (self.firstName, self.lastName, self.email, self.platform, self.picture) = (firstName, lastName, email, platform, picture)
        }

        /// "first last", either part left out when missing or blank.
        var name: String {
            [firstName, lastName].compactMap { UserDirectory.trimmed($0) }.joined(separator: " ")
        }
    }

    /// A user as indexed: what the FTS tables hold for them.
    struct Indexed {
        let uid: String
        let folded: String
        let foldedEmail: String
        var label: Int64

        init(uid: String, folded: String, foldedEmail: String, label: Int64) {
            (self.uid, self.folded, self.foldedEmail, self.label) = (uid, folded, foldedEmail, label)
        }

        init(row: Row) {
            self.init(uid: row.text(0), folded: row.text(1), foldedEmail: row.text(2), label: row.int64(3))
        }

        /// The text of the user's `users_fts` document.
        var text: String { " " + folded + "\u{2}" + foldedEmail }
    }

    // MARK: Following the tree

    /// Makes the directory row of `uid` match `profile`, its value in the tree at `/users/$uid`:
    /// inserted, updated, or removed when the profile is gone (null, or not an object).
    func refresh(uid: String, profile: JSONValue) throws {
        if try update(uid: uid, profile: profile) { try compactIfDue() }
    }

    /// The work of `refresh`; returns whether the indexes changed.
    private func update(uid: String, profile value: JSONValue) throws -> Bool {
        let old = try db.first("SELECT uid, folded, folded_email, name_sort FROM users WHERE uid = ?", [.text(uid)], Indexed.init)
        guard let profile = Profile(value) else {
            if let old {
                try unindex(old)
                try db.run("DELETE FROM users WHERE uid = ?", [.text(uid)])
                return true
            }
            return false
        }
        let folded = TextFolding.fold(profile.name)
        let foldedEmail = Self.foldEmail(profile.email ?? "")
        let fields: [SQLValue] = [profile.firstName, profile.lastName, profile.email, profile.platform, profile.picture]
            .map { $0.map(SQLValue.text) ?? .null }
        if let old, old.folded == folded {
            // Same place in the order: keep the label.
            if old.foldedEmail != foldedEmail {
                try unindex(old)
                try index(Indexed(uid: uid, folded: folded, foldedEmail: foldedEmail, label: old.label))
            }
            try db.run("UPDATE users SET first_name = ?, last_name = ?, email = ?, platform = ?, picture = ?, folded_email = ? WHERE uid = ?",
                       fields + [.text(foldedEmail), .text(uid)])
            return old.foldedEmail != foldedEmail
        }
        if let old {
            try unindex(old)
            try db.run("DELETE FROM users WHERE uid = ?", [.text(uid)])
        }
        let label = try allocateLabel(folded: folded, uid: uid)
        try db.run("""
            INSERT INTO users(uid, first_name, last_name, email, platform, picture, folded, folded_email, name_sort)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
            """, [.text(uid)] + fields + [.text(folded), .text(foldedEmail), .integer(label)])
        try index(Indexed(uid: uid, folded: folded, foldedEmail: foldedEmail, label: label))
        return true
    }

    /// Keeps the FTS5 indexes in few segments. Each transaction that writes adds a small segment
    /// and FTS5's automerge keeps a few per level; a query then looks every term up in every
    /// segment, which made searches several times slower than on one segment (measured: p99 2.2 ms
    /// against 0.55 ms on 100k users). So once the changes since the last compaction reach a
    /// eighth of the users counted then (at least 64), both indexes are merged into one segment
    /// ('optimize'). Its cost grows with the directory but is spread over as many changes, so it
    /// adds a constant amount per change, also when a whole directory arrives at once.
    private func compactIfDue() throws {
        let changes = (try db.scalarInt("SELECT value FROM meta WHERE key = 'directory_changes'") ?? 0) + 1
        let size = try db.scalarInt("SELECT value FROM meta WHERE key = 'directory_compacted_size'") ?? 0
        if changes >= max(64, size / 8) {
            try compact()
        } else {
            try db.run("INSERT OR REPLACE INTO meta(key, value) VALUES ('directory_changes', ?)", [.integer(changes)])
        }
    }

    /// Merges each FTS5 index into one segment and restarts the count of changes.
    func compact() throws {
        try db.run("INSERT INTO users_fts(users_fts) VALUES ('optimize')")
        try db.run("INSERT INTO users_short(users_short) VALUES ('optimize')")
        try db.run("INSERT OR REPLACE INTO meta(key, value) VALUES ('directory_changes', 0)")
        try db.run("INSERT OR REPLACE INTO meta(key, value) VALUES ('directory_compacted_size', ?)", [.integer(Int64(try count()))])
    }

    /// Empties the directory and fills it with `profiles` (uid and profile value), then compacts.
    func rebuild(_ profiles: [(uid: String, profile: JSONValue)]) throws {
        try db.run("DELETE FROM users")
        try db.run("INSERT INTO users_fts(users_fts) VALUES ('delete-all')")
        try db.run("INSERT INTO users_short(users_short) VALUES ('delete-all')")
        for (uid, profile) in profiles { _ = try update(uid: uid, profile: profile) }
        try compact()
        try db.run("INSERT OR REPLACE INTO meta(key, value) VALUES ('directory_built', 1)")
    }

    // MARK: Index maintenance

    private func index(_ user: Indexed) throws {
        let text = user.text
        try db.run("INSERT INTO users_fts(rowid, text) VALUES (?, ?)", [.integer(user.label), .text(text)])
        try db.run("INSERT INTO users_short(rowid, grams) VALUES (?, ?)", [.integer(user.label), .text(Self.grams(text))])
    }

    /// Removes a user's documents; contentless FTS5 needs the exact text that was indexed.
    private func unindex(_ user: Indexed) throws {
        let text = user.text
        try db.run("INSERT INTO users_fts(users_fts, rowid, text) VALUES ('delete', ?, ?)", [.integer(user.label), .text(text)])
        try db.run("INSERT INTO users_short(users_short, rowid, grams) VALUES ('delete', ?, ?)",
                   [.integer(user.label), .text(Self.grams(text))])
    }

    /// A label for a user about to be inserted at `(folded, uid)`: between its neighbours'.
    private func allocateLabel(folded: String, uid: String) throws -> Int64 {
        let key: [SQLValue] = [.text(folded), .text(uid)]
        let before = try db.first("SELECT name_sort FROM users WHERE (folded, uid) < (?, ?) ORDER BY folded DESC, uid DESC LIMIT 1", key) { $0.int64(0) }
        let after = try db.first("SELECT name_sort FROM users WHERE (folded, uid) > (?, ?) ORDER BY folded, uid LIMIT 1", key) { $0.int64(0) }
        let low = before ?? 0, high = after ?? Self.labelMax + 1
        if after == nil, high - low > Self.endSpacing { return low + Self.endSpacing }
        if before == nil, high - low > Self.endSpacing { return high - Self.endSpacing }
        if high - low >= 2 { return low + (high - low) / 2 }
        return try relabel(folded: folded, uid: uid)
    }

    /// Spreads the labels of the users around `(folded, uid)` evenly, widening the window until
    /// the gaps are at least `minimumGap`; returns the label for the user being inserted there.
    private func relabel(folded: String, uid: String) throws -> Int64 {
        var reach = 16
        while true {
            let before = try db.all("""
                SELECT uid, folded, folded_email, name_sort FROM users WHERE (folded, uid) < (?, ?)
                ORDER BY folded DESC, uid DESC LIMIT ?
                """, [.text(folded), .text(uid), .integer(Int64(reach + 1))], Indexed.init)
            let after = try db.all("""
                SELECT uid, folded, folded_email, name_sort FROM users WHERE (folded, uid) > (?, ?)
                ORDER BY folded, uid LIMIT ?
                """, [.text(folded), .text(uid), .integer(Int64(reach + 1))], Indexed.init)
            let low = before.count > reach ? before[reach].label : 0
            let high = after.count > reach ? after[reach].label : Self.labelMax + 1
            var window: [Indexed?] = before.prefix(reach).reversed().map { $0 }
            window.append(nil)
            window += after.prefix(reach).map { $0 }
            let step = (high - low) / Int64(window.count + 1)
            let wholeTable = before.count <= reach && after.count <= reach
            if step < Self.minimumGap && !(wholeTable && step >= 1) {
                reach *= 2
                continue
            }
            // Two passes, so that no new label collides with an old one not yet moved.
            for case let user? in window {
                try unindex(user)
                try db.run("UPDATE users SET name_sort = ? WHERE uid = ?", [.integer(-user.label), .text(user.uid)])
            }
            var label: Int64 = 0
            for (offset, member) in window.enumerated() {
                let newLabel = low + step * Int64(offset + 1)
                guard var user = member else {
                    label = newLabel
                    continue
                }
                user.label = newLabel
                try db.run("UPDATE users SET name_sort = ? WHERE uid = ?", [.integer(newLabel), .text(user.uid)])
                try index(user)
            }
            return label
        }
    }

    // MARK: Search

    /// The first `limit` users matching `folded` (a non-empty folded query): exact name matches,
    /// then matches at the start of a word of the name, then any other substring match in the
    /// name or email; each group in name order.
    ///
    /// First the substring index is asked for `limit` matches in name order. Fewer means those
    /// are all the matches, and they are ranked here (the cheap case for selective queries, which
    /// are the expensive ones for the index). Otherwise each group is asked for in turn; each group
    /// is a superset of the one before (an exact name starts with the query, and a word-start
    /// match is a substring match), so asking for `limit` plus the number already taken, and
    /// skipping those, gives exactly the next group's first members, and every query stops early.
    func search(_ folded: String, limit: Int) throws -> [UserEntry] {
        let scalars = Array(folded.unicodeScalars)
        let anywhere: (sql: String, phrase: String)
        switch scalars.count {
        case 1: anywhere = (Self.shortSQL, "\u{1}" + folded + "\u{1}")
        case 2: anywhere = (Self.shortSQL, String(scalars[0]) + "\u{1}" + String(scalars[1]))
        default: anywhere = (Self.trigramSQL, folded)
        }
        let firstMatches = try labels(anywhere.sql, anywhere.phrase, limit: limit)
        if firstMatches.count < limit {
            // Compared as bytes, as SQLite does: `String` would compare grapheme clusters, and a
            // query may begin inside one (Hangul jamo).
            let query = Array(folded.utf8), wordQuery = Array((" " + folded).utf8)
            let ranked = try rows(firstMatches).map { row -> (Int, Int64, UserEntry) in
                let name = Array(row.folded.utf8)
                let tier = name == query ? 0 : Self.contains([UInt8](" ".utf8) + name, wordQuery) ? 1 : 2
                return (tier, row.label, row.entry)
            }
            return ranked.sorted { ($0.0, $0.1) < ($1.0, $1.1) }.map(\.2)
        }
        var found = [Int64]()
        var seen = Set<Int64>()
        func take(_ labels: [Int64]) {
            for label in labels where found.count < limit && seen.insert(label).inserted { found.append(label) }
        }
        take(try db.all("SELECT name_sort FROM users WHERE folded = ? ORDER BY uid LIMIT ?", [.text(folded), .integer(Int64(limit))]) { $0.int64(0) })
        if found.count < limit {
            let word = scalars.count >= 2 ? (Self.trigramSQL, " " + folded) : (Self.shortSQL, " \u{1}" + folded)
            take(try labels(word.0, word.1, limit: limit + seen.count))
        }
        if found.count < limit {
            take(seen.isEmpty ? firstMatches : try labels(anywhere.sql, anywhere.phrase, limit: limit + seen.count))
        }
        let byLabel = Dictionary(uniqueKeysWithValues: try rows(found).map { ($0.label, $0.entry) })
        return found.compactMap { byLabel[$0] }
    }

    private static let trigramSQL = "SELECT rowid FROM users_fts WHERE users_fts MATCH ? ORDER BY rowid LIMIT ?"
    private static let shortSQL = "SELECT rowid FROM users_short WHERE users_short MATCH ? ORDER BY rowid LIMIT ?"

    /// The first `limit` labels, in order, of the documents matching the phrase.
    private func labels(_ sql: String, _ phrase: String, limit: Int) throws -> [Int64] {
        try db.all(sql, [.text(Self.phrase(phrase)), .integer(Int64(limit))]) { $0.int64(0) }
    }

    /// The users with these labels, in one statement, in no particular order.
    private func rows(_ labels: [Int64]) throws -> [(label: Int64, folded: String, entry: UserEntry)] {
        guard !labels.isEmpty else { return [] }
        let list = "[" + labels.map(String.init).joined(separator: ",") + "]"
        return try db.all("""
            SELECT uid, first_name, last_name, email, platform, picture, name_sort, folded FROM users
            WHERE name_sort IN (SELECT value FROM json_each(?))
            """, [.text(list)]) { row in (row.int64(6), row.text(7), UserDirectory.entry(row)) }
    }

    /// `limit` entries in name order after skipping `offset`.
    func list(limit: Int, offset: Int) throws -> [UserEntry] {
        try db.all("SELECT uid, first_name, last_name, email, platform, picture FROM users ORDER BY name_sort LIMIT ? OFFSET ?",
                   [.integer(Int64(limit)), .integer(Int64(offset))], UserDirectory.entry)
    }

    /// Number of users in the directory.
    func count() throws -> Int {
        Int(try db.scalarInt("SELECT count(*) FROM users") ?? 0)
    }

    private static func entry(_ row: Row) -> UserEntry {
        func optional(_ column: Int32) -> String? { row.isNull(column) ? nil : row.text(column) }
        let profile = Profile(firstName: optional(1), lastName: optional(2), email: optional(3), platform: optional(4), picture: optional(5))
        return UserEntry(uid: row.text(0), name: profile.name, email: profile.email, platform: profile.platform, picture: profile.picture)
    }

    // MARK: Text

    /// Whether `needle` occurs in `haystack`, bytewise.
    static func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard needle.count <= haystack.count else { return false }
        return (0...(haystack.count - needle.count)).contains { start in
            haystack[start..<(start + needle.count)].elementsEqual(needle)
        }
    }

    /// An FTS5 phrase matching `text` literally.
    static func phrase(_ text: String) -> String {
        "\"" + text.split(separator: "\"", omittingEmptySubsequences: false).joined(separator: "\"\"") + "\""
    }

    /// `text` with U+0001 before, between and after its characters: the `users_short` document.
    static func grams(_ text: String) -> String {
        var out = String.UnicodeScalarView()
        out.append("\u{1}")
        for scalar in text.unicodeScalars {
            out.append(scalar)
            out.append("\u{1}")
        }
        return String(out)
    }

    /// A folded email: as `TextFolding.fold`, without spaces (an email has none, and a space
    /// would make the email match word-start queries meant for the name).
    static func foldEmail(_ email: String) -> String {
        var out = String.UnicodeScalarView()
        out.append(contentsOf: TextFolding.fold(email).unicodeScalars.lazy.filter { $0 != " " })
        return String(out)
    }

    static func trimmed(_ text: String?) -> String? {
        guard let text, let first = text.firstIndex(where: { !$0.isWhitespace }),
              let last = text.lastIndex(where: { !$0.isWhitespace }) else { return nil }
        return String(text[first...last])
    }
}
