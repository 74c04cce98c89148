import Crypto
import Foundation
import SQLite
import Testing
import Tree
import Wire
@testable import Store
import TestSupport

/// A user's key for directory tests: distinct, deterministic.
func directoryKey(_ n: Int) -> PrivateKey {
    var seed = [UInt8](repeating: 0x42, count: 32)
    seed[30] = UInt8(n >> 8)
    seed[31] = UInt8(n & 0xFF)
    return try! PrivateKey(seedBytes: seed)
}

func profilePath(_ key: PrivateKey) -> Path { try! Path(segments: ["users", key.publicKey.userID]) }

func profile(_ first: String?, _ last: String?, email: String? = nil, platform: String? = "cli", picture: String? = nil) -> JSONValue {
    var fields = [String: JSONValue]()
    if let first { fields["first_name"] = .string(first) }
    if let last { fields["last_name"] = .string(last) }
    if let email { fields["email"] = .string(email) }
    if let platform { fields["platform"] = .string(platform) }
    if let picture { fields["picture"] = .string(picture) }
    return .object(fields)
}

/// The directory as the issue defines it, computed the slow way from a list of users.
enum DirectoryModel {
    struct User {
        let uid: String
        let name: String
        let email: String
    }

    static func search(_ query: String, in users: [User], limit: Int) -> [String] {
        let q = Array(TextFolding.fold(query).utf8)
        let ranked = users.compactMap { user -> (Int, [UInt8], String)? in
            let name = Array(TextFolding.fold(user.name).utf8)
            let email = Array(TextFolding.fold(user.email).filter { $0 != " " }.utf8)
            let tier: Int
            if name == q { tier = 0 }
            else if contains(Array(" ".utf8) + name, Array(" ".utf8) + q) { tier = 1 }
            else if contains(name, q) || contains(email, q) { tier = 2 }
            else { return nil }
            return (tier, name, user.uid)
        }
        return ranked.sorted { a, b in
            if a.0 != b.0 { return a.0 < b.0 }
            if a.1 != b.1 { return a.1.lexicographicallyPrecedes(b.1) }
            return Array(a.2.utf8).lexicographicallyPrecedes(Array(b.2.utf8))
        }.prefix(limit).map(\.2)
    }

    /// Every user's uid in directory order: folded name, then uid, bytewise.
    static func order(_ users: [User]) -> [String] {
        users.sorted { a, b in
            let (x, y) = (Array(TextFolding.fold(a.name).utf8), Array(TextFolding.fold(b.name).utf8))
            if x != y { return x.lexicographicallyPrecedes(y) }
            return Array(a.uid.utf8).lexicographicallyPrecedes(Array(b.uid.utf8))
        }.map(\.uid)
    }

    static func contains(_ h: [UInt8], _ n: [UInt8]) -> Bool {
        guard n.count <= h.count else { return false }
        return (0...(h.count - n.count)).contains { h[$0..<($0 + n.count)].elementsEqual(n) }
    }
}

/// A store holding some people, each writing their own profile.
struct Directory {
    let store: Store
    var now: UInt64 = 1_000
    var keys: [String: PrivateKey] = [:]

    init() throws { store = try memoryStore() }

    @discardableResult
    mutating func add(_ n: Int, _ first: String?, _ last: String?, email: String? = nil) throws -> String {
        let key = directoryKey(n)
        now += 1
        try store.set(profilePath(key), to: profile(first, last, email: email), signer: key, nowMillis: now)
        keys[key.publicKey.userID] = key
        return key.publicKey.userID
    }

    func names(_ query: String, limit: Int = 20) throws -> [String] {
        try store.searchUsers(query, limit: limit).map(\.name)
    }
}

@Suite("Users directory")
struct UserDirectoryTests {
    @Test("accent-, case- and width-insensitive matching in five languages")
    func matching() throws {
        var d = try Directory()
        try d.add(1, "Nguyễn", "Văn An", email: "an.nguyen@example.vn")
        try d.add(2, "Trần", "Thị Đào", email: "dao@example.vn")
        try d.add(3, "Lê", "Đức Thọ")
        try d.add(4, "박준영", nil)
        try d.add(5, "김민수", nil)
        try d.add(6, "이서연", nil)
        try d.add(7, "Alice", "Smith", email: "alice@example.com")
        try d.add(8, "Jürgen", "Müller", email: "juergen@example.de")
        try d.add(9, "Hans", "Straße")
        try d.add(10, "مُحَمَّد", "عَلِيّ")
        try d.add(11, "أحمد", "حسن")

        #expect(try d.names("nguyen") == ["Nguyễn Văn An"])
        #expect(try d.names("NGUYỄN") == ["Nguyễn Văn An"])
        #expect(try d.names("van an") == ["Nguyễn Văn An"])
        #expect(try d.names("Văn An") == ["Nguyễn Văn An"])
        #expect(try d.names("dao") == ["Trần Thị Đào"])
        #expect(try d.names("Đào") == ["Trần Thị Đào"])
        #expect(try d.names("duc tho") == ["Lê Đức Thọ"])
        #expect(try d.names("đ") == d.names("d"))
        #expect(try Set(d.names("đ")) == ["Trần Thị Đào", "Lê Đức Thọ", "Jürgen Müller"])  // juergen@example.de
        #expect(try d.names("준영") == ["박준영"])
        #expect(try d.names("준") == ["박준영"])
        #expect(try d.names("박") == ["박준영"])
        #expect(try d.names("ㅂ") == ["박준영"])
        #expect(try d.names("민수") == ["김민수"])
        #expect(try d.names("서연") == ["이서연"])
        #expect(try d.names("ＡＬＩＣＥ") == ["Alice Smith"])
        #expect(try d.names("alice") == ["Alice Smith"])
        #expect(try d.names("jurgen") == ["Jürgen Müller"])
        #expect(try d.names("MÜLLER") == ["Jürgen Müller"])
        #expect(try d.names("strasse") == ["Hans Straße"])
        #expect(try d.names("Straße") == ["Hans Straße"])
        #expect(try d.names("محمد") == ["مُحَمَّد عَلِيّ"])
        #expect(try d.names("مُحَمَّد") == ["مُحَمَّد عَلِيّ"])
        #expect(try d.names("محمد علي") == ["مُحَمَّد عَلِيّ"])
        #expect(try d.names("احمد") == ["أحمد حسن"])
        #expect(try d.names("xyz").isEmpty)
    }

    @Test("email substrings match too")
    func email() throws {
        var d = try Directory()
        try d.add(1, "Nguyễn", "Văn An", email: "an.nguyen@example.vn")
        try d.add(2, "Alice", "Smith", email: "alice@example.com")
        #expect(try d.names("example.vn") == ["Nguyễn Văn An"])
        #expect(try d.names("@example") == ["Alice Smith", "Nguyễn Văn An"])
        #expect(try d.names("ALICE@") == ["Alice Smith"])
    }

    @Test("results carry uid, name, email, platform, picture; online and lastSeen are left to the node")
    func entryFields() throws {
        let key = directoryKey(1)
        let store = try memoryStore()
        try store.set(profilePath(key), to: profile("Nguyễn", "Văn An", email: "an@example.vn", platform: "ios", picture: "pictures/an.jpg"),
                      signer: key, nowMillis: 1_000)
        let entry = try #require(try store.searchUsers("an", limit: 5).first)
        #expect(entry == UserEntry(uid: key.publicKey.userID, name: "Nguyễn Văn An", email: "an@example.vn", platform: "ios",
                                   picture: "pictures/an.jpg", online: false, lastSeen: nil))
        var live = entry
        live.online = true
        live.lastSeen = 1_764_000_000_000
        #expect(live.online && live.lastSeen == 1_764_000_000_000)
    }

    @Test("ranking: exact name, then word prefix, then substring; ties by name")
    func ranking() throws {
        var d = try Directory()
        try d.add(1, "Trần", "Thị Lan")
        try d.add(2, "Nguyễn", "Văn An")
        try d.add(3, "Anna", "Schmidt")
        try d.add(4, "An", nil)
        try d.add(5, "Joan", "Smith")
        try d.add(6, "Andrew", "Brown")
        try d.add(7, "Bob", "Kim", email: "bob.han@example.com")
        try d.add(8, "Zoe", "Park")
        #expect(try d.names("an") == [
            "An",
            "Andrew Brown", "Anna Schmidt", "Nguyễn Văn An",
            "Bob Kim", "Joan Smith", "Trần Thị Lan",
        ])
        #expect(try d.names("an", limit: 3) == ["An", "Andrew Brown", "Anna Schmidt"])
        #expect(try d.names("AN ") == d.names("an"))
        // Three or more characters go through the trigram index; same rules.
        #expect(try d.names("ann") == ["Anna Schmidt"])
        #expect(try d.names("smi") == ["Joan Smith"])
        #expect(try d.names("chm") == ["Anna Schmidt"])
        #expect(try d.names("n s") == ["Joan Smith"])
        // Word-start matches ordered before the exact name fill the lookup; the exact name
        // still comes first.
        try d.add(9, "Al", "An")
        try d.add(10, "Alex", "An")
        #expect(try d.names("an", limit: 1) == ["An"])
        #expect(try d.names("an", limit: 3) == ["An", "Al An", "Alex An"])
    }

    @Test("the same as the slow model, for many users and queries, dense and selective")
    func agreesWithModel() throws {
        var d = try Directory()
        let firsts = ["Nguyễn", "Trần", "Lê", "An", "Anna", "Alice", "Jürgen", "박준영", "김민수", "محمد", "Đào", "Dao", "Andreas", "Ann"]
        let lasts = ["Văn An", "Thị Đào", "Müller", "Smith", nil, "علي", "Straße", "Đức Thọ", "Anders", "Lan"]
        var rng = SplitMix64(seed: 11)
        var users = [DirectoryModel.User]()
        for i in 0..<240 {
            let first = firsts[Int(rng.next() % UInt64(firsts.count))]
            let last = lasts[Int(rng.next() % UInt64(lasts.count))]
            let email = rng.next() % 3 == 0 ? nil : "user\(i)@\(["example.com", "mail.vn", "dao.de"][Int(rng.next() % 3)])"
            let uid = try d.add(i, first, last, email: email)
            users.append(.init(uid: uid, name: [first, last].compactMap { $0 }.joined(separator: " "), email: email ?? ""))
        }
        let queries = ["a", "n", "an", "Đ", "d", "da", "ao", "nguyen", "Nguyễn Văn An", "an ", "ann", "mul", "준", "준영", "박", "محمد", "علي",
                       "@", "example", "user1", "user12", "r", "s", "smith", "anders", "ao d", "in", "ye", "x", "qq", "9@"]
        for query in queries {
            for limit in [1, 5, 20, 300] {
                let actual = try d.store.searchUsers(query, limit: limit).map(\.uid)
                #expect(actual == DirectoryModel.search(query, in: users, limit: limit), "query '\(query)' limit \(limit)")
            }
        }
    }

    @Test("renames, field changes and deletes follow the tree")
    func updates() throws {
        var d = try Directory()
        let uid = try d.add(1, "Nguyễn", "Văn An", email: "an@example.vn")
        try d.add(2, "Alice", "Smith")
        let key = d.keys[uid]!
        let path = profilePath(key)

        try d.store.set(try path.appending("last_name"), to: "Văn Bình", signer: key, nowMillis: 2_000)
        #expect(try d.names("binh") == ["Nguyễn Văn Bình"])
        #expect(try d.names("van an").isEmpty)

        try d.store.update(path, with: ["email": "binh@example.vn", "picture": "p/b.jpg"], signer: key, nowMillis: 3_000)
        #expect(try d.names("binh@") == ["Nguyễn Văn Bình"])
        #expect(try d.names("an@example").isEmpty)
        #expect(try d.store.searchUsers("binh", limit: 1).first?.picture == "p/b.jpg")

        try d.store.delete(try path.appending("first_name"), signer: key, nowMillis: 4_000)
        #expect(try d.names("binh") == ["Văn Bình"])

        try d.store.delete(path, signer: key, nowMillis: 5_000)
        #expect(try d.names("binh").isEmpty)
        #expect(try d.store.listUsers(limit: 10).map(\.name) == ["Alice Smith"])

        // Writing the profile again brings the user back.
        try d.store.set(path, to: profile("Nguyễn", "Văn An"), signer: key, nowMillis: 6_000)
        #expect(try d.names("nguyen") == ["Nguyễn Văn An"])
        #expect(try d.store.userCount() == 2)
    }

    @Test("someone else's write to a profile changes nothing")
    func foreignWrite() throws {
        var d = try Directory()
        let uid = try d.add(1, "Alice", "Smith")
        let mallory = directoryKey(99)
        let forged = try Record.make(body: .write([WritePair(path: try profilePath(d.keys[uid]!).appending("first_name"), value: "Mallory")]),
                                     clock: 50_000 << 16, signer: mallory)
        _ = try d.store.ingest([forged], nowMillis: farFuture)
        #expect(try d.names("mallory").isEmpty)
        #expect(try d.names("alice") == ["Alice Smith"])
    }

    @Test("records ingested in any order, with duplicates, give the same directory", arguments: 0..<6)
    func anyOrder(seed: UInt64) throws {
        let keys = (0..<5).map(directoryKey)
        var records = [Record]()
        var clock: UInt64 = 1_000
        func write(_ key: PrivateKey, _ pairs: [(String, JSONValue)]) throws {
            clock += 1
            let body = RecordBody.write(try pairs.map { WritePair(path: try Path($0.0), value: $0.1) }.sorted { $0.path.storageKey < $1.path.storageKey })
            records.append(try Record.make(body: body, clock: clock << 16, signer: key))
        }
        func p(_ key: PrivateKey, _ rest: String = "") -> String { "/users/\(key.publicKey.userID)\(rest)" }
        try write(keys[0], [(p(keys[0]), profile("Nguyễn", "Văn An", email: "an@example.vn"))])
        try write(keys[1], [(p(keys[1]), profile("박준영", nil))])
        try write(keys[2], [(p(keys[2]), profile("Jürgen", "Müller"))])
        try write(keys[0], [(p(keys[0], "/last_name"), "Văn Bình")])
        try write(keys[2], [(p(keys[2]), .null)])
        try write(keys[3], [(p(keys[3]), profile("محمد", "علي"))])
        try write(keys[3], [(p(keys[3], "/email"), "m@example.sa"), (p(keys[3], "/first_name"), "مُحَمَّد")])
        try write(keys[4], [(p(keys[4], "/first_name"), "Trần"), (p(keys[4], "/last_name"), "Thị Đào")])
        try write(keys[1], [(p(keys[0], "/first_name"), "forged")])  // not effective
        let expected = ["Nguyễn Văn Bình", "Trần Thị Đào", "مُحَمَّد علي", "박준영"]

        var rng = SplitMix64(seed: seed)
        var arrival = records.shuffled(using: &rng)
        arrival += records.shuffled(using: &rng).prefix(3)
        let store = try memoryStore()
        if seed % 2 == 0 {
            for record in arrival { _ = try store.ingest([record], nowMillis: farFuture) }
        } else {
            _ = try store.ingest(arrival, nowMillis: farFuture)
        }
        #expect(Set(try store.listUsers(limit: 10).map(\.name)) == Set(expected))
        #expect(try store.searchUsers("binh", limit: 5).map(\.name) == ["Nguyễn Văn Bình"])
        #expect(try store.searchUsers("dao", limit: 5).map(\.name) == ["Trần Thị Đào"])
        #expect(try store.searchUsers("muller", limit: 5).isEmpty)
        #expect(try store.searchUsers("m@example", limit: 5).map(\.name) == ["مُحَمَّد علي"])
        #expect(try store.searchUsers("forged", limit: 5).isEmpty)
    }

    @Test("an empty or blank query is an error, not everyone")
    func emptyQuery() throws {
        var d = try Directory()
        try d.add(1, "Alice", "Smith")
        for query in ["", " ", "   ", "\t\n", "\u{3000}"] {
            #expect(throws: DirectoryError.emptyQuery) { try d.store.searchUsers(query, limit: 10) }
        }
        #expect(throws: DirectoryError.nothingToSearch("\u{301}")) { try d.store.searchUsers("\u{301}", limit: 10) }
        #expect(throws: DirectoryError.invalidLimit(0)) { try d.store.searchUsers("a", limit: 0) }
        #expect(throws: DirectoryError.invalidOffset(-1)) { try d.store.listUsers(limit: 1, offset: -1) }
        #expect(DirectoryError.emptyQuery.description.contains("empty"))
    }

    @Test("names arriving in order into one gap force relabelling; order and index stay right", arguments: [false, true])
    func relabel(descending: Bool) throws {
        var d = try Directory()
        var users = [DirectoryModel.User]()
        users.append(.init(uid: try d.add(0, "Aaron", "Able"), name: "Aaron Able", email: ""))
        users.append(.init(uid: try d.add(1, "Zoe", "Zed"), name: "Zoe Zed", email: ""))
        let numbers = descending ? Array((0..<150).reversed()) : Array(0..<150)
        for i in numbers {
            let last = "Nguyen \(String(1000 + i))"
            users.append(.init(uid: try d.add(i + 2, "Minh", last), name: "Minh " + last, email: ""))
        }
        // The list is in name order, and every user is still found through both indexes.
        #expect(try d.store.listUsers(limit: 1000).map(\.uid) == DirectoryModel.order(users))
        for query in ["m", "mi", "minh", "nguyen 10", "1149", "e"] {
            #expect(try d.store.searchUsers(query, limit: 200).map(\.uid) == DirectoryModel.search(query, in: users, limit: 200), "\(query)")
        }
        try d.store.db.execute("INSERT INTO users_fts(users_fts) VALUES ('integrity-check')")
        try d.store.db.execute("INSERT INTO users_short(users_short) VALUES ('integrity-check')")
        try d.store.db.execute("INSERT INTO users_names(users_names) VALUES ('integrity-check')")
        // Labels are unique and follow the name order.
        let labels = try d.store.db.all("SELECT label FROM users ORDER BY folded, uid") { $0.int64(0) }
        #expect(labels == labels.sorted() && Set(labels).count == labels.count)
    }

    @Test("list pages through everyone in name order")
    func list() throws {
        var d = try Directory()
        try d.add(1, "Trần", "Thị Đào")
        try d.add(2, "Alice", "Smith")
        try d.add(3, "박준영", nil)
        try d.add(4, "Đức", "Anh")
        #expect(try d.store.listUsers(limit: 10).map(\.name) == ["Alice Smith", "Đức Anh", "Trần Thị Đào", "박준영"])
        #expect(try d.store.listUsers(limit: 2, offset: 1).map(\.name) == ["Đức Anh", "Trần Thị Đào"])
        #expect(try d.store.listUsers(limit: 2, offset: 4).isEmpty)
    }

    @Test("rebuilding from the tree gives the same directory")
    func rebuild() throws {
        var d = try Directory()
        for (i, name) in ["Nguyễn Văn An", "Trần Thị Đào", "박준영", "Jürgen Müller", "محمد علي", "Alice Smith"].enumerated() {
            let parts = name.split(separator: " ", maxSplits: 1).map(String.init)
            try d.add(i, parts[0], parts.count > 1 ? parts[1] : nil)
        }
        let before = try d.store.listUsers(limit: 100)
        let search = try d.store.searchUsers("an", limit: 100)
        try d.store.db.run("UPDATE meta SET value = 0 WHERE key = 'directory_built'")
        try d.store.buildUserDirectoryIfNeeded()
        #expect(try d.store.listUsers(limit: 100) == before)
        #expect(try d.store.searchUsers("an", limit: 100) == search)
    }

    @Test("migration 2 builds the directory from profiles already in the tree")
    func migration() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.path + "/store.sqlite"
        do {
            let store = try Store(path: path)
            let key = directoryKey(1)
            try store.set(profilePath(key), to: profile("Nguyễn", "Văn An"), signer: key, nowMillis: 1_000)
            // Back to version 1, as a store written before the directory existed.
            try store.db.execute("DROP TABLE users; DROP TABLE users_fts; DROP TABLE users_short; DROP TABLE users_names; DROP TABLE users_grams; DROP TABLE zone_orders; DROP TABLE zone_order_rows; DROP TABLE read_marks; DROP TABLE pending_large_writes; DELETE FROM meta WHERE key LIKE 'directory_%'; PRAGMA user_version = 1")
        }
        let store = try Store(path: path)
        #expect(try store.searchUsers("nguyen", limit: 5).map(\.name) == ["Nguyễn Văn An"])
    }
}

