import Crypto
import Foundation
import Store
import Tree
import Wire
import TestSupport

/// `searchUsers` on a directory of generated users (names in Vietnamese, Korean, English, German
/// and Arabic) against the ceiling a client would have without it: the whole user list fetched
/// once, folded once, and filtered in memory per query (fold the query, substring-test every
/// user, keep the first `limit` of each ranking group in name order). Same data, same queries,
/// same run; the two must also return the same users, which the benchmark checks.
enum DirectoryBenchmark {
    static let queryCount = 1_000
    static let limit = 20
    static let rounds = 3

    static func run(_ options: BenchOptions) throws -> BenchSection {
        let n = options.records
        var rng = SplitMix64(seed: 0x5EED_D1EC)
        log("directory: generating and signing \(n) profiles...")
        var records = [Record]()
        records.reserveCapacity(n)
        let base: UInt64 = 1_764_000_000_000
        for i in 0..<n {
            var seed = [UInt8](repeating: 0, count: 32)
            withUnsafeBytes(of: UInt64(i + 1).bigEndian) { seed.replaceSubrange(24..<32, with: $0) }
            seed[0] = 0xD1
            let key = try PrivateKey(seedBytes: seed)
            let profile = NameGenerator.profile(index: i, using: &rng)
            let path = try Path(segments: ["users", key.publicKey.userID])
            records.append(try Record.make(body: .write([WritePair(path: path, value: profile)]), clock: (base + UInt64(i)) << 16, signer: key))
        }
        // Arrival order is not name order.
        records.shuffle(using: &rng)

        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("lanchat-bench-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try Store(path: directory + "/store.sqlite")
        log("directory: ingesting...")
        let ingestSeconds = try measure {
            for start in stride(from: 0, to: n, by: 1000) {
                let report = try store.ingest(Array(records[start..<min(start + 1000, n)]), nowMillis: base + UInt64(n) + 1000)
                precondition(report.added == min(1000, n - start))
            }
        }
        // What a running node does once the sync has gone quiet (its next idle tick).
        try store.maintainUserDirectory()
        let userCount = try store.userCount()
        precondition(userCount == n)
        let fileBytes = (try? FileManager.default.attributesOfItem(atPath: directory + "/store.sqlite")[.size] as? Int) ?? 0

        // The client's copy: the whole list, folded once (not timed).
        let list = try store.listUsers(limit: n)
        let client = ScanClient(list)

        let queries = QueryGenerator.queries(count: queryCount, users: list, using: &rng)

        // Warm both (page cache, statement cache).
        for query in queries.prefix(50) {
            _ = try store.searchUsers(query, limit: limit)
            _ = client.search(query, limit: limit)
        }
        // Three rounds over the queries, each query timed on both sides in turn. The first round
        // is the figure; the best of the three per query is shown too, as the machine may be
        // busy with other work (the best of three removes most preemption, not cache misses).
        var indexTimes = [[Double]](repeating: [], count: rounds), scanTimes = [[Double]](repeating: [], count: rounds)
        var mismatches = [String]()
        for round in 0..<rounds {
            log("directory: round \(round + 1) of \(rounds)...")
            for query in queries {
                var found = [UserEntry]()
                let indexSeconds = try measure { found = try store.searchUsers(query, limit: limit) }
                var scanned = [String]()
                let scanSeconds = measure { scanned = client.search(query, limit: limit) }
                indexTimes[round].append(indexSeconds)
                scanTimes[round].append(scanSeconds)
                if round == 0, found.map(\.uid) != scanned, mismatches.count < 5 { mismatches.append(query) }
            }
        }
        let bestIndex = queries.indices.map { i in indexTimes.map { $0[i] }.min()! }
        let bestScan = queries.indices.map { i in scanTimes.map { $0[i] }.min()! }
        var byLength = [Int: [Double]]()
        for (query, seconds) in zip(queries, indexTimes[0]) { byLength[query.count, default: []].append(seconds) }
        guard mismatches.isEmpty else {
            throw BenchFailure("index and scan disagree on queries \(mismatches.map { "'\($0)'" }.joined(separator: ", "))")
        }

        let indexMedian = percentile(indexTimes[0], 0.5), indexP99 = percentile(indexTimes[0], 0.99)
        let scanMedian = percentile(scanTimes[0], 0.5), scanP99 = percentile(scanTimes[0], 0.99)
        let bestIndexMedian = percentile(bestIndex, 0.5), bestIndexP99 = percentile(bestIndex, 0.99)
        let bestScanMedian = percentile(bestScan, 0.5), bestScanP99 = percentile(bestScan, 0.99)
        func ms(_ seconds: Double) -> String { String(format: "%.3f", seconds * 1000) }
        let groups: [(String, ClosedRange<Int>)] = [("1-2", 1...2), ("3-5", 3...5), ("6-12", 6...12)]
        let lengthLines = groups.map { label, range in
            let times = range.flatMap { byLength[$0] ?? [] }
            return "| \(label) characters | \(times.count) | \(ms(percentile(times, 0.5))) | \(ms(percentile(times, 0.99))) |"
        }
        let cores = ProcessInfo.processInfo.activeProcessorCount
        return BenchSection(name: "directory", lines: [
            "## Users directory: \(queryCount) searches among \(n) users",
            "",
            "Run \(ISO8601DateFormatter().string(from: Date())), \(cores) cores. Users with names in Vietnamese, Korean, English, German and Arabic; queries of 1 to 12 characters taken from names and emails (word starts and inner substrings, some without accents or in capitals, a few that match nobody); limit \(limit). The scan is the whole list fetched once and folded once, then per query: fold the query and substring-test every user (a byte search on UTF-8), keeping the first \(limit) of each ranking group; both return the same users for every query.",
            "",
            "| measure | median ms | p99 ms |",
            "|---|---|---|",
            "| **searchUsers (SQLite, FTS5 trigram + order labels)** | **\(ms(indexMedian))** | **\(ms(indexP99))** |",
            "| linear scan of the folded list in memory (ceiling to beat) | \(ms(scanMedian)) | \(ms(scanP99)) |",
            "| searchUsers, best of \(rounds) runs per query | \(ms(bestIndexMedian)) | \(ms(bestIndexP99)) |",
            "| linear scan, best of \(rounds) runs per query | \(ms(bestScanMedian)) | \(ms(bestScanP99)) |",
            "",
            "| searchUsers by query length | queries | median ms | p99 ms |",
            "|---|---|---|---|",
        ] + lengthLines + [
            "",
            "Ratios: scan / index = \(String(format: "%.0f", scanMedian / indexMedian))x at the median, \(String(format: "%.0f", scanP99 / indexP99))x at p99 (best of \(rounds): \(String(format: "%.0f", bestScanMedian / bestIndexMedian))x and \(String(format: "%.0f", bestScanP99 / bestIndexP99))x). Target: p99 under 5 ms and at least 20x.",
            "Building the directory by ingesting the \(n) signed profiles: \(rate(n, ingestSeconds)) profiles/s; database file \(fileBytes / 1_000_000) MB.",
        ])
    }

    static func percentile(_ values: [Double], _ p: Double) -> Double {
        guard !values.isEmpty else { return 0 }
        let sorted = values.sorted()
        return sorted[min(sorted.count - 1, Int((Double(sorted.count) * p).rounded(.up)) - 1)]
    }

    static func log(_ line: String) {
        FileHandle.standardError.write(Data((line + "\n").utf8))
    }
}

struct BenchFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// What a client that fetched the whole list does: fold every user once, then scan per query.
private struct ScanClient {
    struct User {
        let uid: String
        let name: [UInt8]
        let wordName: [UInt8]
        let email: [UInt8]
    }

    /// In the list's order, which is name order.
    let users: [User]

    init(_ list: [UserEntry]) {
        users = list.map { entry in
            let name = TextFolding.fold(entry.name)
            let email = TextFolding.fold(entry.email ?? "").filter { $0 != " " }
            return User(uid: entry.uid, name: Array(name.utf8), wordName: Array((" " + name).utf8), email: Array(email.utf8))
        }
    }

    func search(_ query: String, limit: Int) -> [String] {
        let folded = TextFolding.fold(query)
        let q = Array(folded.utf8)
        let wordQ = Array((" " + folded).utf8)
        var groups: [[String]] = [[], [], []]
        for user in users {
            let group: Int
            if user.name == q {
                group = 0
            } else if contains(user.wordName, wordQ) {
                group = 1
            } else if contains(user.name, q) || contains(user.email, q) {
                group = 2
            } else {
                continue
            }
            if groups[group].count < limit { groups[group].append(user.uid) }
        }
        return Array(groups.joined().prefix(limit))
    }

    private func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard needle.count <= haystack.count else { return false }
        return haystack.withUnsafeBufferPointer { h in
            needle.withUnsafeBufferPointer { n in
                let first = n[0]
                var i = 0
                let last = h.count - n.count
                while i <= last {
                    if h[i] == first {
                        var j = 1
                        while j < n.count && h[i + j] == n[j] { j += 1 }
                        if j == n.count { return true }
                    }
                    i += 1
                }
                return false
            }
        }
    }
}

/// Profiles with realistic names: common family names are common.
private enum NameGenerator {
    /// (name, weight)
    static let vietnameseFamily: [(String, Int)] = [
        ("Nguyễn", 38), ("Trần", 11), ("Lê", 9), ("Phạm", 7), ("Hoàng", 5), ("Huỳnh", 4), ("Phan", 4), ("Vũ", 4),
        ("Võ", 3), ("Đặng", 2), ("Bùi", 2), ("Đỗ", 2), ("Hồ", 2), ("Ngô", 2), ("Dương", 2), ("Lý", 1),
    ]
    static let vietnameseMiddle = ["Văn", "Thị", "Đức", "Minh", "Ngọc", "Thanh", "Hữu", "Quang", "Thu", "Hoàng", "Xuân", "Bảo"]
    static let vietnameseGiven = [
        "An", "Bình", "Cường", "Dũng", "Đào", "Giang", "Hà", "Hải", "Hạnh", "Hiếu", "Hoa", "Hùng", "Hương", "Khánh", "Lan",
        "Linh", "Long", "Mai", "Minh", "Nam", "Nga", "Ngọc", "Phúc", "Phương", "Quân", "Sơn", "Tâm", "Thảo", "Thọ", "Trang",
        "Tuấn", "Việt", "Yến", "Đạt", "Nhung", "Thủy",
    ]
    static let koreanFamily: [(String, Int)] = [
        ("김", 21), ("이", 15), ("박", 8), ("최", 5), ("정", 5), ("강", 2), ("조", 2), ("윤", 2), ("장", 2), ("임", 2),
        ("한", 1), ("오", 1), ("서", 1), ("신", 1), ("권", 1), ("황", 1), ("안", 1), ("송", 1), ("류", 1), ("홍", 1),
    ]
    static let koreanSyllables = ["민", "서", "준", "영", "지", "현", "수", "우", "진", "예", "은", "하", "도", "윤", "성", "재", "연", "주", "혜", "동", "석", "훈", "경", "희", "아", "유", "태", "상"]
    static let englishFirst = [
        "James", "Mary", "John", "Patricia", "Robert", "Jennifer", "Michael", "Linda", "William", "Elizabeth", "David",
        "Barbara", "Richard", "Susan", "Joseph", "Jessica", "Thomas", "Sarah", "Charles", "Karen", "Alice", "Emily", "Oliver", "Sophie",
    ]
    static let englishLast = [
        "Smith", "Johnson", "Williams", "Brown", "Jones", "Garcia", "Miller", "Davis", "Wilson", "Anderson", "Taylor",
        "Thomas", "Moore", "Jackson", "Martin", "Lee", "Thompson", "White", "Harris", "Clark", "O'Brien", "Walker",
    ]
    static let germanFirst = [
        "Jürgen", "Günter", "Jörg", "Björn", "Lukas", "Anna", "Lena", "Sören", "Käthe", "Matthias", "Stefan", "Sabine",
        "Ursula", "Uwe", "Frank", "Dieter", "Heike", "Jens", "Katrin", "Jürgen-Peter",
    ]
    static let germanLast = [
        "Müller", "Schmidt", "Schneider", "Fischer", "Weber", "Meyer", "Wagner", "Becker", "Schulz", "Hoffmann", "Schäfer",
        "Koch", "Bauer", "Richter", "Klein", "Wolf", "Schröder", "Neumann", "Schwarz", "Zimmermann", "Krüger", "Großmann", "Weiß", "Straßburger",
    ]
    static let arabicFirst = ["محمد", "أحمد", "علي", "عمر", "يوسف", "خالد", "فاطمة", "عائشة", "مريم", "حسن", "حسين", "إبراهيم", "سارة", "ليلى", "نور"]
    static let arabicVocalized = ["مُحَمَّد": true, "أَحْمَد": true, "عَلِيّ": true]
    static let arabicLast = ["علي", "حسن", "الأحمد", "المصري", "الخطيب", "العلي", "إبراهيم", "الشامي", "النجار", "الحسيني"]
    static let domains = ["example.com", "mail.vn", "example.de", "corp.kr", "example.sa", "lan.local", "university.edu"]

    static func pick<T>(_ items: [T], _ rng: inout SplitMix64) -> T { items[Int(rng.next() % UInt64(items.count))] }

    static func weighted(_ items: [(String, Int)], _ rng: inout SplitMix64) -> String {
        var roll = Int(rng.next() % UInt64(items.reduce(0) { $0 + $1.1 }))
        for (item, weight) in items {
            if roll < weight { return item }
            roll -= weight
        }
        return items[0].0
    }

    static func profile(index: Int, using rng: inout SplitMix64) -> JSONValue {
        let first: String, last: String?, handle: String
        switch rng.next() % 100 {
        case 0..<30:
            first = weighted(vietnameseFamily, &rng)
            let given = pick(vietnameseGiven, &rng)
            last = pick(vietnameseMiddle, &rng) + " " + given
            handle = ascii(given) + "." + ascii(first)
        case 30..<50:
            // Korean names are written without a space; the profile has them whole.
            first = weighted(koreanFamily, &rng) + pick(koreanSyllables, &rng) + pick(koreanSyllables, &rng)
            last = nil
            handle = "user"
        case 50..<70:
            first = pick(englishFirst, &rng)
            last = pick(englishLast, &rng)
            handle = ascii(first) + "." + ascii(last!)
        case 70..<85:
            first = pick(germanFirst, &rng)
            last = pick(germanLast, &rng)
            handle = ascii(first) + "." + ascii(last!)
        default:
            var given = pick(arabicFirst, &rng)
            if rng.next() % 4 == 0 { given = pick(Array(arabicVocalized.keys).sorted(), &rng) }
            first = given
            last = pick(arabicLast, &rng)
            handle = "u"
        }
        var profile: [String: JSONValue] = [
            "first_name": .string(first),
            "email": .string("\(handle)\(index)@\(pick(domains, &rng))"),
            "platform": .string(pick(["cli", "ios", "android", "web"], &rng)),
        ]
        if let last { profile["last_name"] = .string(last) }
        if rng.next() % 3 == 0 { profile["picture"] = .string("pictures/\(index).jpg") }
        return .object(profile)
    }

    static func ascii(_ s: String) -> String {
        String(TextFolding.fold(s).unicodeScalars.filter { $0.isASCII && $0 != " " && $0 != "'" }.map(Character.init))
    }
}

/// Queries as people type them: mostly the start of a word of a name, sometimes from inside a
/// name or from an email, 1 to 12 characters, some without accents or in capitals.
private enum QueryGenerator {
    static func queries(count: Int, users: [UserEntry], using rng: inout SplitMix64) -> [String] {
        var queries = [String]()
        while queries.count < count {
            let length = Int(rng.next() % 12) + 1
            if rng.next() % 50 == 0 {
                // Nobody: letters in an order no name has.
                queries.append(String("qxzjvwkq".prefix(length)))
                continue
            }
            let user = users[Int(rng.next() % UInt64(users.count))]
            let source = rng.next() % 5 == 0 ? (user.email ?? user.name) : user.name
            let characters = Array(source)
            guard !characters.isEmpty else { continue }
            let wordStarts = characters.indices.filter { $0 == 0 || characters[$0 - 1] == " " }
            let start = rng.next() % 5 < 3 ? wordStarts[Int(rng.next() % UInt64(wordStarts.count))] : Int(rng.next() % UInt64(characters.count))
            var query = String(characters[start..<min(characters.count, start + length)])
            switch rng.next() % 10 {
            case 0, 1, 2: query = String(query.decomposedStringWithCanonicalMapping.unicodeScalars.filter { $0.properties.generalCategory != .nonspacingMark }.map(Character.init))
            case 3: query = query.uppercased()
            default: break
            }
            guard query.contains(where: { !$0.isWhitespace }) else { continue }
            queries.append(query)
        }
        return queries
    }
}
