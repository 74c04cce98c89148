import Testing
import Tree

@Suite("JSON serialization")
struct SerializationTests {
    @Test func rendersDenseIntegerObjectsAsArrays() {
        #expect(JSONValue.object(["0": "a", "1": "b"]).serialized() == #"["a","b"]"#)
        // Largest key 3 < 2 x 2 keys: still an array (Firebase's rule), with holes.
        #expect(JSONValue.object(["0": "a", "3": "b"]).serialized() == #"["a",null,null,"b"]"#)
        // Largest key 4 >= 2 x 2 keys: an object.
        #expect(JSONValue.object(["0": "a", "4": "b"]).serialized() == #"{"0":"a","4":"b"}"#)
        #expect(JSONValue.object(["0": "a", "2": "b"]).serialized() == #"["a",null,"b"]"#)
        #expect(JSONValue.object(["1": "x"]).serialized() == #"[null,"x"]"#)
        #expect(JSONValue.object(["2": "x"]).serialized() == #"{"2":"x"}"#)
        #expect(JSONValue.object(["0": 1, "01": 2]).serialized() == #"{"0":1,"01":2}"#)
        #expect(JSONValue.object(["0": 1, "-1": 2]).serialized() == #"{"-1":2,"0":1}"#)
        #expect(JSONValue.object(["0": 1, "a": 2]).serialized() == #"{"0":1,"a":2}"#)
        // Applied recursively, inside arrays and objects alike.
        let nested: JSONValue = ["k": .object(["0": .object(["0": true, "1": false])])]
        #expect(nested.serialized() == #"{"k":[[true,false]]}"#)
        #expect(JSONValue.array([.object(["1": 2, "0": 1]), .null]).serialized() == "[[1,2],null]")
        #expect(JSONValue.object([:]).serialized() == "{}")
        #expect(JSONValue.array([]).serialized() == "[]")
    }

    @Test func ordersKeysTheFirebaseWay() {
        let value: JSONValue = ["b": 1, "a": 2, "10": 3, "2": 4, "-5": 5, "01": 6, "A": 7]
        #expect(value.serialized() == #"{"-5":5,"2":4,"10":3,"01":6,"A":7,"a":2,"b":1}"#)
    }

    @Test func formatsNumbers() throws {
        #expect(JSONValue.number(3).serialized() == "3")
        #expect(JSONValue.number(-0.0).serialized() == "0")
        #expect(JSONValue.number(-42).serialized() == "-42")
        #expect(JSONValue.number(0.5).serialized() == "0.5")
        #expect(JSONValue.number(0.1).serialized() == "0.1")
        #expect(JSONValue.number(9_007_199_254_740_991).serialized() == "9007199254740991")
        #expect(JSONValue.number(1e300).serialized() == "1e+300")
        #expect(JSONValue.number(1e-7).serialized() == "1e-07")
        #expect(JSONValue.number(.nan).serialized() == "null")
        #expect(JSONValue.number(-.infinity).serialized() == "null")
        // Every rendering is valid JSON that parses back to the same double.
        for number in [9_007_199_254_740_992, Double(bitPattern: 3036), 123456.789, -1.7976931348623157e308, .leastNonzeroMagnitude] {
            #expect(try JSONValue.parse(JSONValue.number(number).serialized()) == .number(number))
        }
    }

    @Test func escapesStrings() {
        #expect(JSONValue.string("a\"b\\c/d").serialized() == #""a\"b\\c/d""#)
        #expect(JSONValue.string("\n\r\t\u{08}\u{0C}").serialized() == #""\n\r\t\b\f""#)
        #expect(JSONValue.string("\u{0}\u{1}\u{1F}\u{7F}").serialized() == "\"\\u0000\\u0001\\u001f\u{7F}\"")
        #expect(JSONValue.string("Nguyễn Văn An").serialized() == "\"Nguyễn Văn An\"")
        #expect(JSONValue.string("박준영 😀 \u{2028}").serialized() == "\"박준영 😀 \u{2028}\"")
        #expect(JSONValue.object(["ключ\n": "значение"]).serialized() == "{\"ключ\\n\":\"значение\"}")
        // Escapes at the start, between and at the end of runs copied whole.
        #expect(JSONValue.string("\"ab\ncd\\\u{1}").serialized() == #""\"ab\ncd\\\u0001""#)
        #expect(JSONValue.string("\n\n").serialized() == #""\n\n""#)
        #expect(JSONValue.string("").serialized() == #""""#)
    }

    @Test func rendersScalarsAndCompactForm() {
        #expect(JSONValue.null.serialized() == "null")
        #expect(JSONValue.bool(true).serialized() == "true")
        let value: JSONValue = ["msg": ["text": "hi", "n": 1, "ok": false]]
        #expect(value.serialized() == #"{"msg":{"n":1,"ok":false,"text":"hi"}}"#)
        #expect(value.description == value.serialized())
    }

    @Test func rendersPrettyWithTwoSpaces() {
        let value: JSONValue = ["b": ["0": 1, "1": ["x": .null]], "a": .object([:])]
        #expect(value.serializedPretty() == """
        {
          "a": {},
          "b": [
            1,
            {
              "x": null
            }
          ]
        }
        """)
        #expect(JSONValue.number(1).serializedPretty() == "1")
    }
}
