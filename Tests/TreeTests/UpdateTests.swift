import Testing
import Tree

@Suite("Multi-path updates")
struct UpdateTests {
    @Test func producesSortedAbsolutePairs() throws {
        let body = try JSONValue.parse(#"{"z":[1,2],"c/d":3,"/e/":null,"b":{"x":{}}}"#)
        let pairs = try UpdateBatch.validateUpdate(at: Path("/a"), body)
        #expect(pairs.map(\.0.storageKey) == ["/a/b", "/a/c/d", "/a/e", "/a/z"])
        #expect(pairs.map(\.1) == [.null, 3, .null, ["0": 1, "1": 2]])
        let batch = try UpdateBatch(at: Path("/a"), body: body)
        #expect(batch.base == (try Path("/a")))
        #expect(batch.children.map(\.0) == pairs.map(\.0))
        #expect(try JSONValue.validateUpdate(at: .root, ["k": 1]).map(\.0) == [try Path("/k")])
    }

    @Test func rejectsMalformedBodies() throws {
        let base = try Path("/a")
        for body: JSONValue in [1, "x", .null, .array([1]), .object([:])] {
            #expect(throws: TreeError.self) { try UpdateBatch.validateUpdate(at: base, body) }
        }
        #expect(throws: TreeError.invalidUpdate("the body is empty")) { try UpdateBatch.validateUpdate(at: base, .object([:])) }
        #expect(throws: TreeError.self) { try UpdateBatch.validateUpdate(at: base, ["b.c": 1]) }
        #expect(throws: TreeError.self) { try UpdateBatch.validateUpdate(at: base, ["b": ["$x": 1]]) }
    }

    @Test func rejectsOverlappingKeys() throws {
        let base = try Path("/a")
        let overlapping: [JSONValue] = [
            ["b": 1, "b/c": 2],
            ["b/c/d": 1, "b": 2],
            ["b": 1, "/b/": 2],
            ["b/c": 1, "b//c": 2],
            ["": 1, "x": 2],
            ["b": 1, "a-": 2, "b/c/d": 3],
        ]
        for body in overlapping {
            #expect(throws: TreeError.self, "\(body)") { try UpdateBatch.validateUpdate(at: base, body) }
        }
        // Siblings and look-alike prefixes are fine.
        #expect(try UpdateBatch.validateUpdate(at: base, ["b": 1, "bc": 2, "c/b": 3]).count == 3)
        let error = #expect(throws: TreeError.self) { try UpdateBatch.validateUpdate(at: base, ["b": 1, "b/c": 2]) }
        #expect(error == .invalidUpdate(#""/b" is an ancestor of "/b/c""#))
    }

    @Test func enforcesLimitsOnAbsolutePaths() throws {
        let base = try Path(segments: (0..<31).map { "p\($0)" })
        #expect(try UpdateBatch.validateUpdate(at: base, ["x": 1]).count == 1)
        #expect(throws: TreeError.pathTooDeep) { try UpdateBatch.validateUpdate(at: base, ["x/y": 1]) }
        #expect(throws: TreeError.pathTooDeep) { try UpdateBatch.validateUpdate(at: base, ["x": ["y": 1]]) }
    }

    @Test func resolvesServerValuesWhenAsked() throws {
        let current = try tree(#"{"a":{"n":5}}"#)
        let body = try JSONValue.parse(#"{"n":{".sv":{"increment":2}},"t/at":{".sv":"timestamp"}}"#)
        let pairs = try UpdateBatch.validateUpdate(at: Path("/a"), body, nowMillis: 1234, current: { current.value(at: $0) })
        #expect(pairs.map(\.1) == [7, 1234])
        #expect(throws: TreeError.self) { try UpdateBatch.validateUpdate(at: Path("/a"), body) }
    }
}
