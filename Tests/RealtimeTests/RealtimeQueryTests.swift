import Testing
import Tree
@testable import Realtime

private let scores: JSONValue = .object([
    "alice": .object(["score": .number(30)]), "bob": .object(["score": .number(10)]),
    "carol": .object(["score": .number(20)]), "dave": .object([:]), "erin": .object(["score": .number(20)]),
])

private func keys(_ value: JSONValue) -> Set<String> { Set(value.objectValue?.keys.map { $0 } ?? []) }

@Test func anEmptyQueryIsTheWholeLocation() throws {
    let query = try RealtimeQuery(object: .object([:]))
    #expect(query.loadsAllData)
    #expect(query.storeQuery.query == nil && query.storeQuery.exact)
}

@Test func orderByChildLimitToLastGoesToTheStoreAsItIs() throws {
    let query = try RealtimeQuery(object: .object(["i": "score", "l": .number(2), "vf": "r"]))
    let (storeQuery, exact) = query.storeQuery
    #expect(exact)
    #expect(storeQuery == FirebaseQuery(order: .child(try Path("score")), limit: .last(2)))
    #expect(keys(query.window(of: scores)) == ["alice", "erin"])
}

@Test func startAfterAndEndBeforeExcludeTheirEnds() throws {
    // startAfter(20) as the SDK sends it: the largest key, not inclusive.
    let after = try RealtimeQuery(object: .object(["i": "score", "sp": .number(20), "sn": "[MAX_NAME]", "sin": false]))
    #expect(!after.storeQuery.exact)
    #expect(keys(after.window(of: scores)) == ["alice"])
    let before = try RealtimeQuery(object: .object(["i": "score", "ep": .number(20), "ein": false]))
    #expect(keys(before.window(of: scores)) == ["dave", "bob"])
    // startAt(20, "erin"): carol (20, "carol") comes before the bound.
    let named = try RealtimeQuery(object: .object(["i": "score", "sp": .number(20), "sn": "erin"]))
    #expect(keys(named.window(of: scores)) == ["erin", "alice"])
}

@Test func keyIndexBoundsAreKeys() throws {
    let query = try RealtimeQuery(object: .object(["i": ".key", "sp": "bob", "sin": false, "l": .number(2), "vf": "l"]))
    #expect(keys(query.window(of: scores)) == ["carol", "dave"])
    #expect(throws: RealtimeError.self) { try RealtimeQuery(object: .object(["i": ".key", "sp": .number(1)])) }
}

@Test func thePriorityIndexOrdersByKey() throws {
    let query = try RealtimeQuery(object: .object(["l": .number(2), "vf": "r"]))
    #expect(query.storeQuery.query == FirebaseQuery(order: .key, limit: .last(2)))
    #expect(keys(query.window(of: scores)) == ["dave", "erin"])
}

@Test func malformedQueriesAreRefused() {
    for bad: JSONValue in [.number(1), .object(["l": .number(-1)]), .object(["l": .number(1.5)]), .object(["vf": "x", "l": .number(1)]),
                           .object(["sp": .object([:])]), .object(["sn": "a"]), .object(["zz": .number(1)]), .object(["i": .number(3)])] {
        #expect(throws: RealtimeError.self) { try RealtimeQuery(object: bad) }
    }
}
