import Testing
import Tree
import TestSupport

/// Query semantics, with expectations taken from the Firebase REST documentation ("Retrieving
/// Data": orderBy, range filters, limits) and the ordering rules ("Sorting data").
@Suite("Firebase queries")
struct FirebaseQueryTests {
    /// Dinosaur facts in the spirit of the documentation's examples.
    static let dinosaurs: JSONValue = [
        "bruhathkayosaurus": ["height": 25, "weight": 135_000, "dimensions": ["height": 25]],
        "lambeosaurus": ["height": 2.1, "weight": 5000, "dimensions": ["height": 2.1]],
        "linhenykus": ["height": 0.6, "weight": 3, "dimensions": ["height": 0.6]],
        "pterodactyl": ["height": 0.6, "weight": 2, "dimensions": ["height": 0.6]],
        "stegosaurus": ["height": 4, "weight": 2500, "dimensions": ["height": 4]],
        "triceratops": ["height": 3, "weight": 11_000, "dimensions": ["height": 3]],
    ]

    /// Parses REST parameters into a query, failing the test on an error.
    func query(_ params: [(String, String)]) throws -> FirebaseQuery {
        try #require(try FirebaseQuery.parse(params))
    }

    /// The keys a query keeps, in key order (the result is an unordered object).
    func keys(_ params: [(String, String)], on value: JSONValue = dinosaurs) throws -> [String] {
        let result = try query(params).apply(to: value)
        guard case .object(let members) = result else {
            Issue.record("expected an object, got \(result)")
            return []
        }
        return FirebaseOrder.sortedKeys(members.keys)
    }

    /// The parse error for `params`, or nil.
    func error(_ params: [(String, String)]) -> FirebaseQueryError? {
        do {
            _ = try FirebaseQuery.parse(params)
            return nil
        } catch {
            return error
        }
    }

    // MARK: - Parsing

    @Test func noQueryParametersIsNoQuery() throws {
        #expect(try FirebaseQuery.parse([]) == nil)
        #expect(try FirebaseQuery.parse([("ns", "demo"), ("print", "pretty"), ("shallow", "true"), ("format", "export"),
                                        ("auth", "x"), ("download", "a"), ("orderby", "\"$key\"")]) == nil)
    }

    @Test func parsesEveryForm() throws {
        #expect(try query([("orderBy", "\"$key\"")]) == FirebaseQuery(order: .key))
        #expect(try query([("orderBy", "\"$value\"")]) == FirebaseQuery(order: .value))
        #expect(try query([("orderBy", "\"dimensions/height\"")]) == FirebaseQuery(order: .child(try Path("dimensions/height"))))
        let full = try query([("ns", "x"), ("orderBy", "\"height\""), ("startAt", "3"), ("endAt", "25.5"), ("limitToLast", "2")])
        #expect(full == FirebaseQuery(order: .child(try Path("height")), startAt: 3, endAt: 25.5, limit: .last(2)))
        #expect(try query([("orderBy", "\"a\""), ("equalTo", "null"), ("limitToFirst", "0")])
            == FirebaseQuery(order: .child(try Path("a")), equalTo: .null, limit: .first(0)))
        #expect(try query([("orderBy", "\"a\""), ("startAt", "\"a+b\""), ("endAt", "true")]).startAt == "a+b")
        #expect(try query([("orderBy", "\"$key\""), ("limitToFirst", "1e2")]).limit == .first(100))
    }

    @Test func filterWithoutOrderByIsRefused() {
        for name in ["startAt", "endAt", "equalTo", "limitToFirst", "limitToLast"] {
            #expect(error([(name, "1")]) == .orderByMissing)
        }
        #expect(FirebaseQueryError.orderByMissing.description == "orderBy must be defined when other query parameters are defined")
    }

    @Test func invalidParametersAreRefused() {
        #expect(error([("orderBy", "$key")]) == .invalidJSON(parameter: "orderBy"))
        #expect(error([("orderBy", "\"$key\""), ("startAt", "a")]) == .invalidJSON(parameter: "startAt"))
        #expect(error([("orderBy", "\"$key\""), ("limitToFirst", "")]) == .invalidJSON(parameter: "limitToFirst"))
        #expect(error([("orderBy", "5")]) == .invalidOrderBy("5"))
        #expect(error([("orderBy", "\"\"")]) == .invalidOrderBy(""))
        #expect(error([("orderBy", "\"/\"")]) == .invalidOrderBy("/"))
        #expect(error([("orderBy", "\"$other\"")]) == .invalidOrderBy("$other"))
        #expect(error([("orderBy", "\"a.b\"")]) == .invalidOrderBy("a.b"))
        #expect(error([("orderBy", "\"$priority\"")]) == .priorityUnsupported)
        #expect(error([("orderBy", "\"a\""), ("startAt", "{\"x\":1}")]) == .invalidBound(parameter: "startAt"))
        #expect(error([("orderBy", "\"a\""), ("equalTo", "[1]")]) == .invalidBound(parameter: "equalTo"))
        #expect(error([("orderBy", "\"$key\""), ("startAt", "5")]) == .invalidBound(parameter: "startAt"))
        #expect(error([("orderBy", "\"$key\""), ("endAt", "null")]) == .invalidBound(parameter: "endAt"))
        #expect(error([("orderBy", "\"$key\""), ("limitToFirst", "-1")]) == .invalidLimit(parameter: "limitToFirst"))
        #expect(error([("orderBy", "\"$key\""), ("limitToLast", "1.5")]) == .invalidLimit(parameter: "limitToLast"))
        #expect(error([("orderBy", "\"$key\""), ("limitToLast", "\"3\"")]) == .invalidLimit(parameter: "limitToLast"))
        #expect(error([("orderBy", "\"$key\""), ("limitToFirst", "1"), ("limitToLast", "1")]) == .conflictingLimits)
        #expect(error([("orderBy", "\"a\""), ("equalTo", "1"), ("startAt", "1")]) == .conflictingRange)
        #expect(error([("orderBy", "\"a\""), ("equalTo", "1"), ("endAt", "1")]) == .conflictingRange)
        #expect(error([("orderBy", "\"a\""), ("orderBy", "\"b\"")]) == .duplicateParameter("orderBy"))
    }

    // MARK: - Ordering and filtering

    @Test func orderByChildWithStartAt() throws {
        // "at least 3 meters tall"
        #expect(try keys([("orderBy", "\"height\""), ("startAt", "3")]) == ["bruhathkayosaurus", "stegosaurus", "triceratops"])
        #expect(try keys([("orderBy", "\"height\""), ("endAt", "3")]) == ["lambeosaurus", "linhenykus", "pterodactyl", "triceratops"])
        #expect(try keys([("orderBy", "\"height\""), ("startAt", "2.1"), ("endAt", "4")]) == ["lambeosaurus", "stegosaurus", "triceratops"])
        #expect(try keys([("orderBy", "\"height\""), ("equalTo", "0.6")]) == ["linhenykus", "pterodactyl"])
    }

    @Test func orderByDeepChildPath() throws {
        #expect(try keys([("orderBy", "\"dimensions/height\""), ("startAt", "3")]) == ["bruhathkayosaurus", "stegosaurus", "triceratops"])
    }

    @Test func limitsAfterOrdering() throws {
        // The two heaviest, and the two lightest.
        #expect(try keys([("orderBy", "\"weight\""), ("limitToLast", "2")]) == ["bruhathkayosaurus", "triceratops"])
        #expect(try keys([("orderBy", "\"weight\""), ("limitToFirst", "2")]) == ["linhenykus", "pterodactyl"])
        // Ties (0.6 m) are broken by key: linhenykus < pterodactyl.
        #expect(try keys([("orderBy", "\"height\""), ("limitToFirst", "1")]) == ["linhenykus"])
        #expect(try keys([("orderBy", "\"height\""), ("limitToFirst", "100")]).count == 6)
    }

    @Test func rangeFiltersApplyBeforeLimits() throws {
        // At least 3 m tall, then the shortest two of those.
        #expect(try keys([("orderBy", "\"height\""), ("startAt", "3"), ("limitToFirst", "2")]) == ["stegosaurus", "triceratops"])
        #expect(try keys([("orderBy", "\"height\""), ("endAt", "3"), ("limitToLast", "1")]) == ["triceratops"])
    }

    @Test func limitZeroKeepsNothing() throws {
        #expect(try query([("orderBy", "\"$key\""), ("limitToFirst", "0")]).apply(to: Self.dinosaurs) == .object([:]))
        #expect(try query([("orderBy", "\"$key\""), ("limitToLast", "0")]).apply(to: Self.dinosaurs).serialized() == "{}")
    }

    @Test func orderByKeyRanges() throws {
        // Names from "a" up to "m" (exclusive of anything after "m").
        #expect(try keys([("orderBy", "\"$key\""), ("startAt", "\"a\""), ("endAt", "\"m\"")])
            == ["bruhathkayosaurus", "lambeosaurus", "linhenykus"])
        #expect(try keys([("orderBy", "\"$key\""), ("equalTo", "\"stegosaurus\"")]) == ["stegosaurus"])
        #expect(try keys([("orderBy", "\"$key\""), ("limitToLast", "2")]) == ["stegosaurus", "triceratops"])
        #expect(try keys([("orderBy", "\"$key\""), ("startAt", "\"\\uf8ff\"")]) == [])
    }

    @Test func integerKeysComeFirstInKeyOrder() throws {
        let value: JSONValue = ["b": 1, "10": 2, "2": 3, "-1": 4, "01": 5, "a": 6, "2147483648": 7]
        #expect(try keys([("orderBy", "\"$key\""), ("limitToFirst", "3")], on: value) == ["-1", "2", "10"])
        #expect(try keys([("orderBy", "\"$key\""), ("limitToLast", "3")], on: value) == ["2147483648", "a", "b"].sorted(by: FirebaseOrder.keyLess))
        // "10" as a bound is an integer key: keys from 10 on are "10" and every string key.
        #expect(try keys([("orderBy", "\"$key\""), ("startAt", "\"10\"")], on: value) == ["10", "01", "2147483648", "a", "b"])
        #expect(try keys([("orderBy", "\"$key\""), ("endAt", "\"2\"")], on: value) == ["-1", "2"])
    }

    @Test func valueOrderAcrossTypes() throws {
        let value: JSONValue = ["o": ["x": 1], "s": "text", "s2": "", "n": -5, "n2": 7, "t": true, "f": false]
        let query = try query([("orderBy", "\"$value\"")])
        // null < false < true < numbers < strings < objects (no null values exist in a tree).
        let ordered = try #require(query.apply(to: value).objectValue)
        #expect(ordered.count == 7)
        #expect(try keys([("orderBy", "\"$value\""), ("limitToFirst", "3")], on: value) == ["f", "n", "t"])
        #expect(try keys([("orderBy", "\"$value\""), ("limitToLast", "1")], on: value) == ["o"])
        #expect(try keys([("orderBy", "\"$value\""), ("startAt", "true"), ("endAt", "0")], on: value) == ["n", "t"])
        #expect(try keys([("orderBy", "\"$value\""), ("startAt", "\"\"")], on: value) == ["o", "s", "s2"])
        #expect(try keys([("orderBy", "\"$value\""), ("equalTo", "7")], on: value) == ["n2"])
        #expect(try keys([("orderBy", "\"$value\""), ("equalTo", "\"7\"")], on: value) == [])
        #expect(try keys([("orderBy", "\"$value\""), ("startAt", "false"), ("endAt", "false")], on: value) == ["f"])
    }

    @Test func childrenLackingTheChildSortAsNullFirst() throws {
        let value: JSONValue = [
            "a": ["score": 10], "b": "primitive", "c": ["other": 1], "d": ["score": "high"], "e": ["score": false], "f": ["score": 10],
        ]
        // Missing (b, c) are null and come first, ties by key; then false, numbers (ties by key), strings.
        #expect(try keys([("orderBy", "\"score\""), ("limitToFirst", "2")], on: value) == ["b", "c"])
        #expect(try keys([("orderBy", "\"score\""), ("limitToFirst", "3")], on: value) == ["b", "c", "e"])
        #expect(try keys([("orderBy", "\"score\""), ("limitToLast", "1")], on: value) == ["d"])
        #expect(try keys([("orderBy", "\"score\""), ("equalTo", "null")], on: value) == ["b", "c"])
        #expect(try keys([("orderBy", "\"score\""), ("equalTo", "10")], on: value) == ["a", "f"])
        #expect(try keys([("orderBy", "\"score\""), ("equalTo", "10"), ("limitToLast", "1")], on: value) == ["f"])
        #expect(try keys([("orderBy", "\"score\""), ("startAt", "null"), ("endAt", "false")], on: value) == ["b", "c", "e"])
    }

    @Test func valuesAreKeptWhole() throws {
        let result = try query([("orderBy", "\"height\""), ("equalTo", "25")]).apply(to: Self.dinosaurs)
        #expect(result == ["bruhathkayosaurus": ["height": 25, "weight": 135_000, "dimensions": ["height": 25]]])
    }

    @Test func primitivesAndNull() throws {
        let orderOnly = try query([("orderBy", "\"$key\"")])
        let filtered = try query([("orderBy", "\"$key\""), ("limitToFirst", "1")])
        #expect(orderOnly.apply(to: .null) == .null)
        #expect(filtered.apply(to: .null) == .null)
        #expect(orderOnly.apply(to: "text") == "text")
        #expect(orderOnly.apply(to: 5) == 5)
        #expect(filtered.apply(to: "text") == .null)
        #expect(try query([("orderBy", "\"a\""), ("equalTo", "1")]).apply(to: true) == .null)
        // Without any filter, the whole object comes back.
        #expect(orderOnly.apply(to: Self.dinosaurs) == Self.dinosaurs)
    }

    @Test func arrayLikeResultsRenderAsArrays() throws {
        let list: JSONValue = ["0": "a", "1": "b", "2": "c"]
        let first = try query([("orderBy", "\"$key\""), ("limitToFirst", "2")]).apply(to: list)
        #expect(first.serialized() == "[\"a\",\"b\"]")
        let last = try query([("orderBy", "\"$key\""), ("limitToLast", "1")]).apply(to: list)
        #expect(last.serialized() == "{\"2\":\"c\"}")
        // Raw arrays are treated as the objects they stand for.
        let raw: JSONValue = .array(["x", .null, "y"])
        #expect(try query([("orderBy", "\"$value\""), ("limitToLast", "1")]).apply(to: raw) == ["2": "y"])
    }

    @Test func matchesAReferenceModelOnRandomData() throws {
        // A brute-force reference: the ordered list of all children, filtered element by element.
        var factory = ValueFactory(rng: SplitMix64(seed: 2024))
        for _ in 0..<300 {
            var members: [String: JSONValue] = [:]
            for _ in 0..<factory.int(0...12) {
                let child: JSONValue = factory.int(0...3) == 0 ? factory.primitive() : ["n": .number(Double(factory.int(0...5)))]
                members[factory.key(numeric: true)] = child
            }
            let value = JSONValue.object(members)
            let bound = Double(factory.int(0...5))
            let count = factory.int(0...4)
            let query = FirebaseQuery(order: .child(try Path("n")), startAt: .number(bound), limit: .last(count))
            let ordered = members.sorted { lhs, rhs in
                FirebaseOrder.entryLess(key: lhs.key, value: lhs.value.value(at: try! Path("n")),
                                        key: rhs.key, value: rhs.value.value(at: try! Path("n")))
            }
            let expected = ordered.filter { !FirebaseOrder.valueLess($0.value.value(at: try! Path("n")), .number(bound)) }.suffix(count)
            #expect(query.apply(to: value) == .object(Dictionary(uniqueKeysWithValues: expected.map { ($0.key, $0.value) })))
        }
    }
}
