import Testing
import Tree

@Suite("Normalization")
struct NormalizationTests {
    @Test func convertsArraysAndDropsNulls() throws {
        let raw = try JSONValue.parse(#"[1,null,{"a":null},[],{},"x"]"#)
        #expect(try raw.normalized() == .object(["0": 1, "5": "x"]))
        #expect(try JSONValue.parse(#"{"a":{"b":{}},"c":null}"#).normalized() == .null)
        #expect(try JSONValue.parse(#"{"a":{"b":{},"c":[null,2]}}"#).normalized() == ["a": ["c": ["1": 2]]])
        #expect(try JSONValue.string("s").normalized() == "s")
        #expect(try JSONValue.null.normalized() == .null)
    }

    @Test func validatesEveryKey() {
        #expect(throws: TreeError.invalidKey("b.c", reason: "contains forbidden character '.'")) {
            try JSONValue.parse(#"{"a":{"b.c":1}}"#).normalized()
        }
        #expect(throws: TreeError.invalidKey(".sv", reason: "contains forbidden character '.'")) {
            try JSONValue.parse(#"{".sv":"timestamp"}"#).normalized()
        }
        #expect(throws: TreeError.invalidKey("", reason: "key is empty")) {
            try JSONValue.parse(#"{"":1}"#).normalized()
        }
        // Invalid keys are reported even when their value is null.
        #expect(throws: TreeError.self) { try JSONValue.parse(#"{"a/b":null}"#).normalized() }
        #expect(throws: TreeError.nonFiniteNumber) { try JSONValue.object(["a": .number(.nan)]).normalized() }
    }

    @Test func boundsDepth() throws {
        func nested(_ levels: Int) -> JSONValue {
            var value: JSONValue = 1
            for _ in 0..<levels { value = ["k": value] }
            return value
        }
        #expect(try nested(32).normalized() == nested(32))
        #expect(throws: TreeError.pathTooDeep) { try nested(33).normalized() }
        let base = try Path(segments: (0..<30).map { "p\($0)" })
        #expect(try nested(2).normalized(at: base) == nested(2))
        #expect(throws: TreeError.pathTooDeep) { try nested(3).normalized(at: base) }
        // Arrays count as levels too.
        var deepArray: JSONValue = 1
        for _ in 0..<33 { deepArray = .array([deepArray]) }
        #expect(throws: TreeError.pathTooDeep) { try deepArray.normalized() }
    }

    @Test func boundsPathLength() throws {
        let base = try Path("/" + String(repeating: "a", count: 760))
        #expect(try JSONValue.object(["bcdefgh": 1]).normalized(at: base) == ["bcdefgh": 1])
        #expect(throws: TreeError.pathTooLong) { try JSONValue.object(["bcdefghi": 1]).normalized(at: base) }
    }
}
