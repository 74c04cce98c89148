import SQLite

/// How many users each trigram occurs in, so that a long query can be looked up by the part of
/// it that the fewest users share.
///
/// FTS5 answers a phrase by walking the lists of all its trigrams side by side, so a long query
/// costs the sum of its trigrams' lists, up to the place of its `limit`-th match. Most of that is
/// spent on the trigrams nearly everyone has: "exa" and "@ex" of the common email domains,
/// "use" of generated handles, "ngu" of the most common Vietnamese name. Measured on 100k users:
/// the phrase "59989@exam" took 1.0-1.6 ms, the phrase of its rarest five characters "59989"
/// (three trigrams of about 300 users each) 35 µs, with the whole query then checked on each
/// candidate's row.
///
/// `users_grams` (migration 4) holds, for every trigram of the `users_fts` documents, the number
/// of users whose document contains it; `index` and `unindex` keep it current in the same
/// transaction, cutting the document with SQLite's `substr`, which counts characters as the
/// trigram tokenizer does (a test holds both the upkeep and the migration to counts worked out
/// independently). The counts only ever
/// choose which part of a query to look up; every match is still checked against the whole
/// query, so a wrong count could cost time, never a result.
extension UserDirectory {
    /// Migration 4: the counts, filled from the users already in the directory (a directory not
    /// built yet gets them as it is built). FTS5's own vocabulary view gives, for each trigram of
    /// `users_fts`, the number of documents holding it, which is the count wanted: reading it is
    /// one pass over the index (0.2 s for 100k users, against 14 s to cut every document into
    /// trigrams in SQL).
    static let gramsSchema = """
        CREATE TABLE users_grams (
            gram TEXT PRIMARY KEY,
            users INTEGER NOT NULL
        ) STRICT, WITHOUT ROWID;
        CREATE VIRTUAL TABLE temp.users_fts_terms USING fts5vocab(main, 'users_fts', 'row');
        INSERT INTO users_grams(gram, users) SELECT term, doc FROM temp.users_fts_terms;
        DROP TABLE temp.users_fts_terms;
        """

    /// The positions of the trigrams of the text bound to ?1.
    private static let positionsSQL = """
        WITH RECURSIVE at(n) AS (
            SELECT 1 WHERE length(?1) >= 3
            UNION ALL SELECT n + 1 FROM at WHERE n < length(?1) - 2
        )
        """

    /// Counts a new document's trigrams, each once.
    func countGrams(of text: String) throws {
        try db.run("""
            \(Self.positionsSQL)
            INSERT INTO users_grams(gram, users) SELECT DISTINCT substr(?1, n, 3), 1 FROM at WHERE true
            ON CONFLICT(gram) DO UPDATE SET users = users + 1
            """, [.text(text)])
    }

    /// Uncounts a removed document's trigrams; a trigram no user has any more leaves the table.
    func uncountGrams(of text: String) throws {
        try db.run("""
            \(Self.positionsSQL)
            UPDATE users_grams SET users = users - 1 WHERE gram IN (SELECT substr(?1, n, 3) FROM at)
            """, [.text(text)])
        try db.run("""
            \(Self.positionsSQL)
            DELETE FROM users_grams WHERE users <= 0 AND gram IN (SELECT substr(?1, n, 3) FROM at)
            """, [.text(text)])
    }

    /// Scalars of a phrase looked up whole; a longer one is looked up by its rarest stretch of
    /// this length (three trigrams) and then checked whole.
    static let lookupScalars = 5

    /// A stretch is looked up instead of the whole phrase only when its trigrams' counts add up to
    /// at most this. Each of its matches is then checked on the user's row, which costs far more
    /// than stepping over an entry of an index list; a stretch of common trigrams (a frequent name
    /// part) can have thousands of matches that the whole phrase does not have, and was measured
    /// slower than the phrase. A rare stretch (digits of an address, an unusual name) bounds the
    /// checks to a few hundred.
    static let rareStretchUsers: Int64 = 1024

    /// The number of users sharing the trigram at position ?2 (from 1) of the text bound to ?1,
    /// cut by `substr` as `countGrams` cuts it.
    private static let countSQL = "SELECT users FROM users_grams WHERE gram = substr(?1, ?2, 3)"

    /// The part of `text` (a phrase for a trigram index) to look up instead of `text`: the
    /// stretch of `lookupScalars` characters whose trigrams the fewest users share in sum, when
    /// `text` is longer and that sum is at most `rareStretchUsers`; else nil (look up `text`).
    func rarestStretch(of text: String) throws -> String? {
        let scalars = Array(text.unicodeScalars)
        guard scalars.count > Self.lookupScalars else { return nil }
        // One statement stepped once per trigram, the text bound once: a long query has up to a
        // dozen trigrams, and a `scalarInt` call for each (statement cache lookup, bindings, a
        // string per trigram) made the counts a tenth of the search's time.
        let statement = try db.cachedStatement(Self.countSQL)
        defer {
            statement.reset()
            statement.clearBindings()
        }
        try statement.bind(.text(text), at: 1)
        let counts = try (1...(scalars.count - 2)).map { position in
            statement.reset()
            try statement.bind(.integer(Int64(position)), at: 2)
            return try statement.step() ? statement.int64(0) : 0
        }
        let trigrams = Self.lookupScalars - 2
        var best = 0, bestSum = Int64.max
        for start in 0...(counts.count - trigrams) {
            let sum = counts[start..<(start + trigrams)].reduce(0, +)
            if sum < bestSum { (best, bestSum) = (start, sum) }
        }
        guard bestSum <= Self.rareStretchUsers else { return nil }
        return String(String.UnicodeScalarView(scalars[best..<(best + Self.lookupScalars)]))
    }
}
