import HTTP
import Testing

@Suite("HTTP request targets")
struct TargetTests {
    func target(_ text: String) -> HTTPRequest? {
        request("GET \(text) HTTP/1.1\r\nHost: h\r\n\r\n")
    }

    @Test func segmentsArePercentDecodedUTF8() throws {
        let parsed = try #require(target("/users/Nguy%E1%BB%85n%20V%C4%83n/a%2Fb/.json"))
        #expect(parsed.path == ["users", "Nguyễn Văn", "a/b", ".json"])
        #expect(parsed.rawPath == "/users/Nguy%E1%BB%85n%20V%C4%83n/a%2Fb/.json")
        #expect(target("/")?.path == [])
        #expect(target("/.json")?.path == [".json"])
        #expect(target("//a//b/")?.path == ["a", "b"])
    }

    @Test func queryIsDecodedAndPlusStaysPlus() throws {
        let parsed = try #require(target("/a.json?orderBy=%22%24key%22&startAt=%22a+b%22&equalTo=1e+5&flag&=v&x=%3D=&&ns=demo"))
        #expect(parsed.query.map(\.name) == ["orderBy", "startAt", "equalTo", "flag", "", "x", "ns"])
        #expect(parsed.query.map(\.value) == ["\"$key\"", "\"a+b\"", "1e+5", "", "v", "==", "demo"])
        #expect(parsed.queryValue("startAt") == "\"a+b\"")
        #expect(parsed.queryValue("missing") == nil)
        #expect(target("/a.json?q=%2B")?.queryValue("q") == "+")
    }

    @Test func badPercentEncodingIsRefused() {
        for text in ["/a%", "/a%2", "/a%zz", "/a%2g", "/%C3", "/%C3%28", "/%FF", "/%ED%A0%80",
                     "/a?x=%", "/a?x=%4", "/a?%ZZ=1", "/a?x=%C0%AF"] {
            #expect(parseError("GET \(text) HTTP/1.1\r\nHost: h\r\n\r\n") == .invalidTarget, "\(text)")
        }
        #expect(HTTPError.invalidTarget.status == 400)
    }

    @Test func encodedNulDecodesButIsText() {
        // %00 is valid UTF-8; refusing it is the tree's job (keys forbid control characters).
        #expect(target("/a%00b")?.path == ["a\u{00}b"])
    }
}
