import Testing
import Tree

@Suite("Server values")
struct ServerValueTests {
    let now = 1_700_000_000_123.0

    func resolve(_ text: String, at path: String = "/", in root: JSONValue = .null) throws -> JSONValue {
        try JSONValue.parse(text).resolvingServerValues(at: Path(path), nowMillis: now, current: { root.value(at: $0) })
    }

    @Test func replacesTimestamps() throws {
        #expect(try resolve(#"{".sv":"timestamp"}"#) == .number(now))
        #expect(try resolve(#"{"at":{".sv":"timestamp"},"x":1}"#) == ["at": .number(now), "x": 1])
    }

    @Test func incrementsNumbers() throws {
        let root = try tree(#"{"c":{"n":10,"s":"text","o":{"p":1}}}"#)
        #expect(try resolve(#"{".sv":{"increment":5}}"#, at: "/c/n", in: root) == 15)
        #expect(try resolve(#"{".sv":{"increment":-0.5}}"#, at: "/c/n", in: root) == 9.5)
        #expect(try resolve(#"{".sv":{"increment":5}}"#, at: "/c/s", in: root) == 5, "non-number: just n")
        #expect(try resolve(#"{".sv":{"increment":5}}"#, at: "/c/o", in: root) == 5)
        #expect(try resolve(#"{".sv":{"increment":5}}"#, at: "/c/missing", in: root) == 5)
    }

    @Test func resolvesAtAnyDepthWithTheRightPath() throws {
        let root = try tree(#"{"c":{"n":10,"list":{"1":100}}}"#)
        let resolved = try resolve(
            #"{"n":{".sv":{"increment":1}},"deep":{"t":{".sv":"timestamp"}},"list":[null,{".sv":{"increment":1}}]}"#,
            at: "/c", in: root)
        #expect(resolved == ["n": 11, "deep": ["t": .number(now)], "list": [.null, 101]])
        #expect(try resolved.normalized() == ["n": 11, "deep": ["t": .number(now)], "list": ["1": 101]])
        #expect(try resolve(#"[1,"a",true,null]"#) == [1, "a", true, .null])
        #expect(!(try JSONValue.parse(#"{"a":[{"b":1}]}"#)).containsServerValues)
        #expect(try JSONValue.parse(#"{"a":[{".sv":"timestamp"}]}"#).containsServerValues)
    }

    @Test func rejectsUnknownServerValues() {
        let invalid = [
            #"{".sv":"time"}"#,
            #"{".sv":1}"#,
            #"{".sv":null}"#,
            #"{".sv":{"increment":"1"}}"#,
            #"{".sv":{"increment":1,"x":2}}"#,
            #"{".sv":{"decrement":1}}"#,
            #"{".sv":"timestamp","other":1}"#,
            #"{"a":{"b":{".sv":{}}}}"#,
        ]
        for text in invalid {
            #expect(throws: TreeError.invalidServerValue, "\(text)") { try resolve(text) }
        }
    }
}
