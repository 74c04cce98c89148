import SQLite
import Tree

/// The users directory: one row per profile in the tree (`/users/$uid`), indexed for
/// accent-insensitive substring search in name order.
///
/// Tables (migration 3; migration 2 had the same with the user id as the key):
/// - `users`: keyed by the user's **order label**, an integer whose order is the directory
///   order, `(folded, uid)` bytewise; then the fields shown in results (the display name
///   "first last" as `Profile.name` makes it), `folded` (the folded display name) and
///   `folded_email` (the folded email, spaces removed). Labels are sparse (new users take a label
///   between their neighbours'); when two neighbours leave no room, a window of nearby users is
///   spread out again (`relabel`). The label being the row's key, a search joins the index's
///   matches to their rows directly, and the index on `(folded, uid)` also answers exact-name
///   lookups and a new user's neighbours without touching the rows.
/// - `users_fts`: FTS5, trigram tokenizer, contentless, one document per user whose rowid is the
///   order label and whose text is `" " + folded + U+0002 + folded_email`. A phrase query for a
///   folded query of three or more characters finds the substring matches; for `" " + query`
///   it finds the matches at the start of a word of the name. Because the rowid is the order
///   label, `ORDER BY rowid LIMIT n` returns the first n matches in name order straight from the
///   index: the cost follows n, not the number of matches (a one-letter query matches most users).
/// - `users_names`: the same over `" " + folded` alone, for the word-start lookups of queries of
///   two or more characters. They could run on `users_fts` too, but a query taken from an email
///   ("mail.vn") would then walk the long lists of the trigrams every address shares, to find
///   no name; here those trigrams are absent or rare, and the lookup ends at once.
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

    /// Migration 3: the directory as described above. It replaces migration 2's tables, empty,
    /// and marks the directory unbuilt when the store holds records, so the first directory
    /// request refills it from the tree (`Store.buildUserDirectoryIfNeeded`).
    static let schema = """
        DROP TABLE IF EXISTS users;
        DROP TABLE IF EXISTS users_fts;
        DROP TABLE IF EXISTS users_short;
        DROP TABLE IF EXISTS users_names;
        DELETE FROM meta WHERE key LIKE 'directory_%';
        CREATE TABLE users (
            label INTEGER PRIMARY KEY,
            uid TEXT NOT NULL UNIQUE,
            name TEXT NOT NULL,
            email TEXT,
            platform TEXT,
            picture TEXT,
            folded TEXT NOT NULL,
            folded_email TEXT NOT NULL
        ) STRICT;
        CREATE INDEX users_by_name ON users(folded, uid);
        CREATE VIRTUAL TABLE users_fts USING fts5(text, content='', columnsize=0, tokenize='trigram case_sensitive 1');
        CREATE VIRTUAL TABLE users_short USING fts5(grams, content='', columnsize=0, detail=none, tokenize='trigram case_sensitive 1');
        CREATE VIRTUAL TABLE users_names USING fts5(text, content='', columnsize=0, tokenize='trigram case_sensitive 1');
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
        /// The text of the user's `users_names` document.
        var nameText: String { " " + folded }
    }

    // MARK: Following the tree

    /// Makes the directory row of `uid` match `profile`, its value in the tree at `/users/$uid`:
    /// inserted, updated, or removed when the profile is gone (null, or not an object).
    func refresh(uid: String, profile: JSONValue) throws {
        if try update(uid: uid, profile: profile) { try compactIfDue() }
    }

    /// The work of `refresh`; returns whether the indexes changed.
    private func update(uid: String, profile value: JSONValue) throws -> Bool {
        let old = try db.first("SELECT uid, folded, folded_email, label FROM users WHERE uid = ?", [.text(uid)], Indexed.init)
        guard let profile = Profile(value) else {
            if let old {
                try unindex(old)
                try db.run("DELETE FROM users WHERE uid = ?", [.text(uid)])
                return true
            }
            return false
        }
        let name = profile.name
        let folded = TextFolding.fold(name)
        let foldedEmail = Self.foldEmail(profile.email ?? "")
        let fields: [SQLValue] = [.text(name)] + [profile.email, profile.platform, profile.picture].map { $0.map(SQLValue.text) ?? .null }
        if let old, old.folded == folded {
            // Same place in the order: keep the label.
            if old.foldedEmail != foldedEmail {
                try unindex(old)
                try index(Indexed(uid: uid, folded: folded, foldedEmail: foldedEmail, label: old.label))
            }
            try db.run("UPDATE users SET name = ?, email = ?, platform = ?, picture = ?, folded_email = ? WHERE uid = ?",
                       fields + [.text(foldedEmail), .text(uid)])
            return old.foldedEmail != foldedEmail
        }
        if let old {
            try unindex(old)
            try db.run("DELETE FROM users WHERE uid = ?", [.text(uid)])
        }
        let label = try allocateLabel(folded: folded, uid: uid)
        try db.run("""
            INSERT INTO users(uid, name, email, platform, picture, folded, folded_email, label)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?)
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
        try db.run("INSERT INTO users_names(users_names) VALUES ('optimize')")
        try db.run("INSERT OR REPLACE INTO meta(key, value) VALUES ('directory_changes', 0)")
        try db.run("INSERT OR REPLACE INTO meta(key, value) VALUES ('directory_compacted_size', ?)", [.integer(Int64(try count()))])
    }

    /// Empties the directory and fills it with `profiles` (uid and profile value), then compacts.
    func rebuild(_ profiles: [(uid: String, profile: JSONValue)]) throws {
        try db.run("DELETE FROM users")
        try db.run("INSERT INTO users_fts(users_fts) VALUES ('delete-all')")
        try db.run("INSERT INTO users_short(users_short) VALUES ('delete-all')")
        try db.run("INSERT INTO users_names(users_names) VALUES ('delete-all')")
        try db.run("DELETE FROM users_grams")
        for (uid, profile) in profiles { _ = try update(uid: uid, profile: profile) }
        try compact()
        try db.run("INSERT OR REPLACE INTO meta(key, value) VALUES ('directory_built', 1)")
    }

    // MARK: Index maintenance

    private func index(_ user: Indexed) throws {
        let text = user.text
        try db.run("INSERT INTO users_fts(rowid, text) VALUES (?, ?)", [.integer(user.label), .text(text)])
        try db.run("INSERT INTO users_short(rowid, grams) VALUES (?, ?)", [.integer(user.label), .text(Self.grams(text))])
        try db.run("INSERT INTO users_names(rowid, text) VALUES (?, ?)", [.integer(user.label), .text(user.nameText)])
        try countGrams(of: text)
    }

    /// Removes a user's documents; contentless FTS5 needs the exact text that was indexed.
    private func unindex(_ user: Indexed) throws {
        let text = user.text
        try db.run("INSERT INTO users_fts(users_fts, rowid, text) VALUES ('delete', ?, ?)", [.integer(user.label), .text(text)])
        try db.run("INSERT INTO users_names(users_names, rowid, text) VALUES ('delete', ?, ?)", [.integer(user.label), .text(user.nameText)])
        try db.run("INSERT INTO users_short(users_short, rowid, grams) VALUES ('delete', ?, ?)",
                   [.integer(user.label), .text(Self.grams(text))])
        try uncountGrams(of: text)
    }

    /// A label for a user about to be inserted at `(folded, uid)`: between its neighbours'.
    private func allocateLabel(folded: String, uid: String) throws -> Int64 {
        let key: [SQLValue] = [.text(folded), .text(uid)]
        let before = try db.first("SELECT label FROM users WHERE (folded, uid) < (?, ?) ORDER BY folded DESC, uid DESC LIMIT 1", key) { $0.int64(0) }
        let after = try db.first("SELECT label FROM users WHERE (folded, uid) > (?, ?) ORDER BY folded, uid LIMIT 1", key) { $0.int64(0) }
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
                SELECT uid, folded, folded_email, label FROM users WHERE (folded, uid) < (?, ?)
                ORDER BY folded DESC, uid DESC LIMIT ?
                """, [.text(folded), .text(uid), .integer(Int64(reach + 1))], Indexed.init)
            let after = try db.all("""
                SELECT uid, folded, folded_email, label FROM users WHERE (folded, uid) > (?, ?)
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
                try db.run("UPDATE users SET label = ? WHERE uid = ?", [.integer(-user.label), .text(user.uid)])
            }
            var label: Int64 = 0
            for (offset, member) in window.enumerated() {
                let newLabel = low + step * Int64(offset + 1)
                guard var user = member else {
                    label = newLabel
                    continue
                }
                user.label = newLabel
                try db.run("UPDATE users SET label = ? WHERE uid = ?", [.integer(newLabel), .text(user.uid)])
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
    /// Every index lookup asks for matches in name order (the label order) with a limit, so its
    /// cost follows the limit, not the number of matches (a one-letter query matches most users).
    /// Each group is a superset of the one before (an exact name starts with the query, and a
    /// word-start match is a substring match), so asking a group for `limit` plus the number
    /// already taken, and skipping those, gives exactly its next members.
    ///
    /// Which lookup runs first is a guess that only changes the cost, never the result: a query
    /// of a few characters usually has more than `limit` word-start matches, which then settle
    /// the answer with the exact-name lookup alone; a longer one usually matches fewer than
    /// `limit` users anywhere, and a first substring lookup that returns fewer than `limit` holds
    /// all the matches, which are then ranked here.
    func search(_ folded: String, limit: Int) throws -> [UserEntry] {
        let scalarCount = folded.unicodeScalars.count
        let anywhere: (index: Index, phrase: String)
        let wordStart: (index: Index, phrase: String)
        switch scalarCount {
        case 1:
            anywhere = (Self.short, "\u{1}" + folded + "\u{1}")
            wordStart = (Self.short, " \u{1}" + folded)
        case 2:
            let scalars = folded.unicodeScalars
            anywhere = (Self.short, String(scalars.first!) + "\u{1}" + String(scalars[scalars.index(after: scalars.startIndex)]))
            wordStart = (Self.names, " " + folded)
        default:
            anywhere = (Self.trigrams, folded)
            wordStart = (Self.names, " " + folded)
        }
        // Compared as bytes, as SQLite does: `String` would compare grapheme clusters, and a
        // query may begin inside one (Hangul jamo).
        let query = Array(folded.utf8), wordQuery = Array((" " + folded).utf8)
        // A long phrase is looked up by its rarest stretch, and each candidate checked whole.
        var stretches = [String: String?]()
        // The lookup's first `limit` matches in name order, less those whose tier is not in
        // `tiers` (not read: the search has them already).
        func matches(_ lookup: (index: Index, phrase: String), limit: Int, tiers: ClosedRange<Int> = 0...2) throws -> [Match] {
            var sql = lookup.index.sql, values: [SQLValue] = [.text(Self.phrase(lookup.phrase)), .integer(Int64(limit))]
            if let filtered = lookup.index.stretchSQL {
                if stretches[lookup.phrase] == nil { stretches[lookup.phrase] = try rarestStretch(of: lookup.phrase) }
                if let stretch = stretches[lookup.phrase]! {
                    sql = filtered
                    values = [.text(Self.phrase(stretch)), .integer(Int64(limit)), .text(lookup.phrase)]
                }
            }
            var found = [Match]()
            try db.query(sql, values) { row in
                if let match = Match(row, query: query, wordQuery: wordQuery, tiers: tiers) { found.append(match) }
            }
            return found
        }

        var firstMatches: [Match]? = nil
        if scalarCount > Self.wordStartFirstUpTo {
            let all = try matches(anywhere, limit: limit)
            if all.count < limit {
                // Every match is here: rank them.
                return all.sorted { ($0.tier, $0.label) < ($1.tier, $1.label) }.map(\.entry)
            }
            firstMatches = all
        }
        // The first word-start matches in order: those among the first substring matches when
        // they are enough (all word-start matches up to the last of those are among them), else
        // a lookup. `limit` of them always fill the places the exact names leave, as the exact
        // names are word-start matches too.
        let words: [Match]
        let coveredUpTo: Match?   // every word-start match up to this one is in `words`; nil: all are
        let wordsInPrefix = firstMatches?.filter { $0.tier <= 1 } ?? []
        if wordsInPrefix.count >= limit {
            words = wordsInPrefix
            coveredUpTo = firstMatches?.last
        } else {
            words = try matches(wordStart, limit: limit)
            coveredUpTo = words.count < limit ? nil : words.last
        }
        // The exact names (one folded name, so neighbours in the order) are all among `words`
        // when no word-start match is missing, or when the covered stretch ends past the query's
        // place in the order; only otherwise are they looked up.
        let exactAreAmongWords = coveredUpTo?.namePastQuery ?? true
        let exact = exactAreAmongWords
            ? words.filter { $0.tier == 0 }
            : try db.all(Self.exactSQL, [.text(folded), .integer(Int64(limit))]) {
                Match($0, query: query, wordQuery: wordQuery, tiers: 0...2)
            }.compactMap { $0 }
        // Which users are taken follows from the tiers, with no set of labels: unless the exact
        // names fill the answer, they are all in `exact`, so the word-start matches still to take
        // are those of tier 1; and unless those fill it too, `words` holds every word-start match,
        // so the other matches still to take are those of tier 2.
        var found = exact.prefix(limit).map(\.entry)
        found += words.lazy.filter { $0.tier == 1 }.prefix(limit - found.count).map(\.entry)
        if found.count < limit {
            // The first substring matches serve if they hold as many others as are missing (they
            // are a prefix of all the substring matches); else the first `limit` plus the number
            // taken hold enough of them.
            let others = firstMatches?.filter { $0.tier == 2 } ?? []
            let rest = others.count >= limit - found.count ? others : try matches(anywhere, limit: limit + found.count, tiers: 2...2)
            found += rest.prefix(limit - found.count).map(\.entry)
        }
        return found
    }

    /// Queries of up to this many scalars (folded) look up word starts first; see `search`.
    static let wordStartFirstUpTo = 4

    /// A matching user as a search lookup returns them, with what the ranking needs to know of
    /// their folded name, worked out on the row's bytes where SQLite holds them (copying the name
    /// out for each candidate cost an allocation per row).
    private struct Match {
        let label: Int64
        /// 0: the folded name is the query; 1: a word of the name starts with it; 2: any other
        /// match (compared bytewise, as the order is).
        let tier: Int
        /// Whether the folded name comes after the query in the order (bytewise).
        let namePastQuery: Bool
        let entry: UserEntry

        /// From the columns of `columns`, in that order; `query` is the folded query's UTF-8 and
        /// `wordQuery` the same after a space. Nil when the tier is not among `tiers`: a user the
        /// search already has is not read again.
        init?(_ row: Row, query: [UInt8], wordQuery: [UInt8], tiers: ClosedRange<Int>) {
            (tier, namePastQuery) = row.withBlob(1) { name in
                let tier = name.elementsEqual(query) ? 0 : name.starts(with: query) || UserDirectory.contains(name, wordQuery) ? 1 : 2
                return (tier, query.lexicographicallyPrecedes(name))
            }
            guard tiers.contains(tier) else { return nil }
            label = row.int64(0)
            entry = UserDirectory.entry(row, from: 2)
        }
    }

    private static let columns = "users.label, users.folded, users.uid, users.name, users.email, users.platform, users.picture"
    /// One FTS5 table's lookups, joined to the rows, in name order.
    private struct Index {
        /// The matches of the phrase ?1, at most ?2.
        let sql: String
        /// The matches of a stretch of the phrase (?1) whose document holds the whole phrase
        /// (?3), checked on the row by `holdsPhrase`, at most ?2; nil for an index whose phrases
        /// are never long enough to be looked up by a stretch.
        let stretchSQL: String?

        init(table: String, holdsPhrase: String?) {
            let select = "SELECT \(UserDirectory.columns) FROM \(table) JOIN users ON users.label = \(table).rowid WHERE \(table) MATCH ?1"
            sql = "\(select) ORDER BY \(table).rowid LIMIT ?2"
            stretchSQL = holdsPhrase.map { "\(select) AND \($0) ORDER BY \(table).rowid LIMIT ?2" }
        }
    }

    /// Its phrases are folded queries, which hold no control character and no space at either
    /// end: such a phrase is in a `users_fts` document (`Indexed.text`) exactly when it is in the
    /// folded name or in the folded email, never across the U+0002 between them or on the space
    /// before the name. So candidates are checked on the two columns, without building each
    /// one's document (measured 20% faster on a stretch with a few hundred candidates).
    private static let trigrams = Index(table: "users_fts", holdsPhrase: "(instr(users.folded, ?3) OR instr(users.folded_email, ?3))")
    private static let names = Index(table: "users_names", holdsPhrase: "instr(' ' || users.folded, ?3)")
    /// Phrases of at most four characters (a one- or two-character query).
    private static let short = Index(table: "users_short", holdsPhrase: nil)
    private static let exactSQL = "SELECT \(columns) FROM users WHERE folded = ? ORDER BY uid LIMIT ?"

    /// `limit` entries in name order after skipping `offset`.
    func list(limit: Int, offset: Int) throws -> [UserEntry] {
        try db.all("SELECT uid, name, email, platform, picture FROM users ORDER BY label LIMIT ? OFFSET ?",
                   [.integer(Int64(limit)), .integer(Int64(offset))]) { UserDirectory.entry($0, from: 0) }
    }

    /// Number of users in the directory.
    func count() throws -> Int {
        Int(try db.scalarInt("SELECT count(*) FROM users") ?? 0)
    }

    /// An entry from the columns uid, name, email, platform, picture starting at `first`.
    private static func entry(_ row: Row, from first: Int32) -> UserEntry {
        func optional(_ column: Int32) -> String? { row.isNull(column) ? nil : row.text(column) }
        return UserEntry(uid: row.text(first), name: row.text(first + 1), email: optional(first + 2),
                         platform: optional(first + 3), picture: optional(first + 4))
    }

    // MARK: Text

    /// Whether `needle` occurs in `haystack`, bytewise.
    static func contains(_ haystack: UnsafeRawBufferPointer, _ needle: [UInt8]) -> Bool {
        guard needle.count <= haystack.count else { return false }
        return (0...(haystack.count - needle.count)).contains { start in
            haystack[start..<(start + needle.count)].elementsEqual(needle)
        }
    }

    /// An FTS5 phrase matching `text` literally.
    static func phrase(_ text: String) -> String {
        var out = String.UnicodeScalarView()
        out.append("\"")
        for scalar in text.unicodeScalars {
            out.append(scalar)
            if scalar == "\"" { out.append("\"") }
        }
        out.append("\"")
        return String(out)
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
