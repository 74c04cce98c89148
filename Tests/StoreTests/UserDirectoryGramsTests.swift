import Foundation
import SQLite
import Testing
import Tree
@testable import Store
import TestSupport

/// The trigram counts, worked out again from the directory's rows: for each user the document
/// `" " + folded + U+0002 + folded_email`, each distinct run of three scalars counted once.
private func expectedCounts(_ db: Connection) throws -> [String: Int64] {
    var counts = [String: Int64]()
    for text in try db.all("SELECT folded, folded_email FROM users", [], { " " + $0.text(0) + "\u{2}" + $0.text(1) }) {
        let scalars = Array(text.unicodeScalars)
        guard scalars.count >= 3 else { continue }
        let grams = Set((0...(scalars.count - 3)).map { String(String.UnicodeScalarView(scalars[$0..<($0 + 3)])) })
        for gram in grams { counts[gram, default: 0] += 1 }
    }
    return counts
}

private func storedCounts(_ db: Connection) throws -> [String: Int64] {
    Dictionary(uniqueKeysWithValues: try db.all("SELECT gram, users FROM users_grams", []) { ($0.text(0), $0.int64(1)) })
}

@Suite("Users directory trigram counts")
struct UserDirectoryGramsTests {
    @Test("the counts follow new users, renames, email changes, relabelling and deletes")
    func countsFollowChanges() throws {
        var d = try Directory()
        var uids = [String]()
        for i in 0..<40 {
            // Names arriving in order into one gap, so that relabelling happens too.
            uids.append(try d.add(i, "Minh", "Nguyễn \(1000 + i)", email: "minh\(i)@example.com"))
        }
        try d.add(100, "박준영", nil, email: "user7@corp.kr")
        try d.add(101, "Ab", nil)
        #expect(try storedCounts(d.store.db) == expectedCounts(d.store.db))

        for (n, uid) in uids.prefix(10).enumerated() {
            let path = profilePath(d.keys[uid]!)
            switch n % 3 {
            case 0: try d.store.set(try path.appending("last_name"), to: .string("Trần \(n)"), signer: d.keys[uid]!, nowMillis: 10_000 + UInt64(n))
            case 1: try d.store.set(try path.appending("email"), to: .string("x\(n)@mail.vn"), signer: d.keys[uid]!, nowMillis: 10_000 + UInt64(n))
            default: try d.store.delete(path, signer: d.keys[uid]!, nowMillis: 10_000 + UInt64(n))
            }
        }
        #expect(try storedCounts(d.store.db) == expectedCounts(d.store.db))
        // A trigram nobody has any more is gone, not left at zero.
        #expect(try d.store.db.scalarInt("SELECT count(*) FROM users_grams WHERE users <= 0") == 0)

        try d.store.db.run("UPDATE meta SET value = 0 WHERE key = 'directory_built'")
        try d.store.buildUserDirectoryIfNeeded()
        #expect(try storedCounts(d.store.db) == expectedCounts(d.store.db))
    }

    @Test("migration 4 counts the users already in the directory")
    func migration() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.path + "/store.sqlite"
        var expected = [String: Int64]()
        do {
            let store = try Store(path: path)
            for (i, (first, last)) in [("Nguyễn", "Văn An"), ("محمد", "علي"), ("Jürgen", "Müller"), ("김민수", "")].enumerated() {
                let key = directoryKey(i)
                try store.set(profilePath(key), to: profile(first, last, email: "p\(i)@example.de"), signer: key, nowMillis: 1_000 + UInt64(i))
            }
            expected = try expectedCounts(store.db)
            try store.db.execute("DROP TABLE users_grams; DROP TABLE zone_orders; DROP TABLE zone_order_rows; DROP TABLE read_marks; DROP TABLE pending_large_writes; PRAGMA user_version = 3")
        }
        let store = try Store(path: path)
        #expect(try storedCounts(store.db) == expected)
        #expect(!expected.isEmpty)
    }

    @Test("a long query is looked up by its rarest stretch and still matched whole")
    func rarestStretch() throws {
        var d = try Directory()
        for i in 0..<30 { try d.add(i, "Alice", "Smith \(i)", email: "alice\(i)@example.com") }
        try d.add(40, "Bob", "Stone", email: "bob59989@example.com")
        try d.add(41, "Carol", "Stone", email: "carol59989@mail.vn")
        let directory = UserDirectory(db: d.store.db)
        // The digits are the rare part; the domain is everyone's.
        #expect(try directory.rarestStretch(of: "59989@exam") == "59989")
        // Short phrases are looked up whole.
        #expect(try directory.rarestStretch(of: "59989") == nil)
        // Both share the stretch; only one has the whole query.
        #expect(try d.names("59989@exam") == ["Bob Stone"])
        #expect(try d.names("59989@mail") == ["Carol Stone"])
        #expect(try d.names("59989") == ["Bob Stone", "Carol Stone"])
        #expect(try d.names("b59989@example.co") == ["Bob Stone"])
        // A query whose trigrams nobody has finds nobody.
        #expect(try d.names("59989@nowhere").isEmpty)
    }
}
