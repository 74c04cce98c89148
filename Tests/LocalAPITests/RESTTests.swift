import Foundation
import Testing
import Tree

@Suite("Local API: Firebase REST")
struct RESTTests {
    static let jsonType = "application/json; charset=utf-8"

    @Test func getOfAnAbsentValueIsNull() throws {
        let api = try APIFixture()
        defer { api.shutdown() }
        for target in ["/nothing.json", "/.json", "/a/b/c.json", "/nothing.json?ns=my-db", "/nothing.json?print=pretty&format=export"] {
            let reply = try api.call("GET", target, headers: [("X-Firebase-Decoding", "1")])
            #expect(reply.status == 200, "\(target)")
            #expect(reply.text == "null", "\(target)")
            #expect(reply.header("Content-Type") == Self.jsonType)
            #expect(reply.header("ETag") == "null_etag")
            #expect(reply.header("Access-Control-Allow-Origin") == "*")
        }
    }

    @Test func putThenGet() throws {
        let api = try APIFixture()
        defer { api.shutdown() }
        let put = try api.call("PUT", "/a.json", body: #"{"b":1,"c":{"d":2}}"#)
        #expect(put.status == 200)
        #expect(put.json == ["b": 1, "c": ["d": 2]])
        #expect(put.header("Content-Type") == Self.jsonType)
        let etag = try #require(put.header("ETag"))
        #expect(etag == firebaseETag(of: ["b": 1, "c": ["d": 2]]))

        let get = try api.call("GET", "/a.json")
        #expect(get.status == 200)
        #expect(get.text == #"{"b":1,"c":{"d":2}}"#)
        #expect(get.header("ETag") == etag)
        #expect(try api.call("GET", "/a/c/d.json").text == "2")
        #expect(try api.call("GET", "/a/c.json").json == ["d": 2])
        #expect(try api.call("GET", "/.json").json == ["a": ["b": 1, "c": ["d": 2]]])

        // PUT replaces; empty objects vanish with the parents they leave empty.
        #expect(try api.call("PUT", "/a.json", body: #"{"x":{}}"#).status == 200)
        #expect(try api.call("GET", "/a.json").text == "null")
    }

    @Test func nonASCIIAndArraysRoundTrip() throws {
        let api = try APIFixture()
        defer { api.shutdown() }
        #expect(try api.call("PUT", "/greeting.json", body: #""Xin chào, Nguyễn Văn An ✓""#).status == 200)
        let get = try api.call("GET", "/greeting.json")
        #expect(get.json == "Xin chào, Nguyễn Văn An ✓")
        #expect(get.header("Content-Type") == Self.jsonType)
        // A percent-encoded UTF-8 key.
        #expect(try api.call("PUT", "/rooms/ph%C3%B2ng.json", body: "1").status == 200)
        #expect(try api.call("GET", "/rooms.json").json == ["phòng": 1])
        #expect(try api.call("PUT", "/list.json", body: "[1,2,3]").status == 200)
        #expect(try api.call("GET", "/list.json").json == [1, 2, 3])
    }

    @Test func shallow() throws {
        let api = try APIFixture()
        defer { api.shutdown() }
        _ = try api.call("PUT", "/a.json", body: #"{"b":1,"c":{"d":2}}"#)
        #expect(try api.call("GET", "/a.json?shallow=true").json == ["b": true, "c": true])
        #expect(try api.call("GET", "/a/b.json?shallow=true").json == 1)
        #expect(try api.call("GET", "/none.json?shallow=true").text == "null")
        let mixed = try api.call("GET", "/a.json?shallow=true&orderBy=%22$key%22")
        #expect(mixed.status == 400)
        #expect(mixed.json?["error"] != nil)
    }

    @Test func queries() throws {
        let api = try APIFixture()
        defer { api.shutdown() }
        let put = try api.call("PUT", "/scores.json?print=silent", body: #"{"x":{"n":3},"y":{"n":1},"z":{"n":2}}"#)
        #expect(put.status == 204)
        func get(_ query: String) throws -> JSONValue? {
            let reply = try api.call("GET", "/scores.json?" + query)
            #expect(reply.status == 200, "\(query): \(reply)")
            return reply.json
        }
        #expect(try get("orderBy=%22n%22&limitToFirst=2") == ["y": ["n": 1], "z": ["n": 2]])
        #expect(try get("orderBy=%22n%22&limitToLast=1") == ["x": ["n": 3]])
        #expect(try get("orderBy=%22n%22&startAt=2") == ["x": ["n": 3], "z": ["n": 2]])
        #expect(try get("orderBy=%22n%22&endAt=2") == ["y": ["n": 1], "z": ["n": 2]])
        #expect(try get("orderBy=%22n%22&equalTo=3") == ["x": ["n": 3]])
        #expect(try get("orderBy=%22n%22&startAt=1&endAt=2&limitToFirst=1") == ["y": ["n": 1]])
        #expect(try get("orderBy=\"$key\"&startAt=\"y\"") == ["y": ["n": 1], "z": ["n": 2]])
        #expect(try get("orderBy=%22%24key%22&endAt=%22x%22") == ["x": ["n": 3]])
        let none = try get("orderBy=%22n%22&limitToFirst=0")
        #expect(none == [:] || none == nil || none == .null)

        _ = try api.call("PUT", "/v.json", body: #"{"a":"pear","b":"apple","c":"fig"}"#)
        let byValue = try api.call("GET", "/v.json?orderBy=%22$value%22&limitToFirst=2")
        #expect(byValue.json == ["b": "apple", "c": "fig"])

        // '+' is a literal plus in query values, not a space.
        _ = try api.call("PUT", "/plus.json", body: #"{"a+b":1,"a b":2}"#)
        #expect(try api.call("GET", "/plus.json?orderBy=%22$key%22&equalTo=%22a+b%22").json == ["a+b": 1])
        #expect(try api.call("GET", "/plus.json?orderBy=%22$key%22&equalTo=%22a%20b%22").json == ["a b": 2])

        // A child path as the order.
        _ = try api.call("PUT", "/deep.json", body: #"{"p":{"s":{"v":2}},"q":{"s":{"v":1}}}"#)
        #expect(try api.call("GET", "/deep.json?orderBy=%22s/v%22&limitToFirst=1").json == ["q": ["s": ["v": 1]]])
    }

    @Test func queryErrorsAre400WithFirebaseText() throws {
        let api = try APIFixture()
        defer { api.shutdown() }
        _ = try api.call("PUT", "/scores.json", body: #"{"x":{"n":3}}"#)
        let missing = try api.call("GET", "/scores.json?limitToFirst=1")
        #expect(missing.status == 400)
        #expect(missing.header("Content-Type") == Self.jsonType)
        #expect(missing.json == ["error": "orderBy must be defined when other query parameters are defined"])
        for query in ["startAt=1", "equalTo=%22a%22", "orderBy=n", "orderBy=%22%24priority%22", "orderBy=%22n%22&limitToFirst=-1",
                      "orderBy=%22n%22&limitToFirst=1.5", "orderBy=%22n%22&limitToFirst=1&limitToLast=1",
                      "orderBy=%22$key%22&startAt=1", "orderBy=%22n%22&startAt={}", "orderBy=%22n%22&orderBy=%22m%22",
                      "orderBy=%22n%22&equalTo=1&startAt=1", "orderBy=%22a..b%22"] {
            let reply = try api.call("GET", "/scores.json?" + query)
            #expect(reply.status == 400, "\(query): \(reply)")
            #expect(reply.json?["error"]?.stringValue?.isEmpty == false, "\(query)")
        }
    }

    @Test func putWithPrintSilentIs204() throws {
        let api = try APIFixture()
        defer { api.shutdown() }
        let reply = try api.call("PUT", "/s.json?print=silent&ns=test-db", body: #"{"k":true}"#)
        #expect(reply.status == 204)
        #expect(reply.body.isEmpty)
        #expect(reply.header("Content-Length") == nil)
        #expect(reply.header("ETag") == firebaseETag(of: ["k": true]))
        #expect(try api.call("GET", "/s.json").json == ["k": true])
        #expect(try api.call("PATCH", "/s.json?print=silent", body: #"{"j":1}"#).status == 204)
        #expect(try api.call("POST", "/s.json?print=silent", body: "2").status == 204)
        #expect(try api.call("DELETE", "/s.json?print=silent").status == 204)
        #expect(try api.call("GET", "/s.json").text == "null")
    }

    @Test func prettyPrintIsStillJSON() throws {
        let api = try APIFixture()
        defer { api.shutdown() }
        _ = try api.call("PUT", "/p.json", body: #"{"a":{"b":1}}"#)
        let reply = try api.call("GET", "/p.json?print=pretty")
        #expect(reply.json == ["a": ["b": 1]])
    }

    @Test func patch() throws {
        let api = try APIFixture()
        defer { api.shutdown() }
        _ = try api.call("PUT", "/a.json", body: #"{"b":1,"c":{"d":2,"keep":true},"e":5}"#)
        let patch = try api.call("PATCH", "/a.json", headers: [("X-Firebase-ETag", "true")], body: #"{"c/d":3,"e":null,"f/g":"new"}"#)
        #expect(patch.status == 200)
        #expect(patch.json == ["c/d": 3, "e": nil, "f/g": "new"])
        #expect(patch.header("Content-Type") == Self.jsonType)
        let expected: JSONValue = ["b": 1, "c": ["d": 3, "keep": true], "f": ["g": "new"]]
        #expect(patch.header("ETag") == firebaseETag(of: expected))
        #expect(try api.call("GET", "/a.json").json == expected)
        // Unasked, a PATCH's answer carries no ETag: working it out reads the whole location.
        let plain = try api.call("PATCH", "/a.json", body: #"{"h":1}"#)
        #expect(plain.status == 200 && plain.header("ETag") == nil)
        // No deep merge: a listed child is replaced whole.
        _ = try api.call("PATCH", "/a.json", body: #"{"c":{"z":1}}"#)
        #expect(try api.call("GET", "/a/c.json").json == ["z": 1])
    }

    @Test func patchErrors() throws {
        let api = try APIFixture()
        defer { api.shutdown() }
        _ = try api.call("PUT", "/a.json", body: #"{"b":1}"#)
        for body in ["1", #""text""#, "[1,2]", "null", "true"] {
            let reply = try api.call("PATCH", "/a.json", body: body)
            #expect(reply.status == 400, "\(body): \(reply)")
            #expect(reply.json?["error"] != nil)
        }
        for body in [#"{"x":1,"x/y":2}"#, #"{"x/y":1,"x/y/z":2}"#, #"{"a$b":1}"#] {
            let reply = try api.call("PATCH", "/a.json", body: body)
            #expect(reply.status == 400, "\(body): \(reply)")
        }
        #expect(try api.call("GET", "/a.json").json == ["b": 1])
    }

    @Test func post() throws {
        let api = try APIFixture()
        defer { api.shutdown() }
        let first = try api.call("POST", "/chat.json", body: #"{"text":"hi"}"#)
        #expect(first.status == 200)
        #expect(first.header("Content-Type") == Self.jsonType)
        let name = try #require(first.json?["name"]?.stringValue)
        #expect(name.count == 20)
        #expect(try api.call("GET", "/chat/\(name).json").json == ["text": "hi"])

        // No body: Firebase's default, the empty string.
        let empty = try api.call("POST", "/chat.json")
        let second = try #require(empty.json?["name"]?.stringValue)
        #expect(second > name)
        #expect(try api.call("GET", "/chat/\(second).json").text == #""""#)
        let explicitEmpty = try api.call("POST", "/chat.json", body: "")
        let third = try #require(explicitEmpty.json?["name"]?.stringValue)
        #expect(third > second)
        #expect(try api.call("GET", "/chat.json?shallow=true").json == .object([name: true, second: true, third: true]))
    }

    @Test func delete() throws {
        let api = try APIFixture()
        defer { api.shutdown() }
        _ = try api.call("PUT", "/a.json", body: #"{"b":1,"c":2}"#)
        let reply = try api.call("DELETE", "/a/b.json")
        #expect(reply.status == 200)
        #expect(reply.text == "null")
        #expect(reply.header("Content-Type") == Self.jsonType)
        #expect(try api.call("GET", "/a.json").json == ["c": 2])
        #expect(try api.call("DELETE", "/a.json").status == 200)
        #expect(try api.call("GET", "/a.json").text == "null")
        // Deleting nothing is fine too.
        #expect(try api.call("DELETE", "/never.json").status == 200)
    }

    @Test func etagHeaderAndIfNoneMatch() throws {
        let api = try APIFixture()
        defer { api.shutdown() }
        _ = try api.call("PUT", "/e.json", body: #"{"v":1}"#)
        let tagged = try api.call("GET", "/e.json", headers: [("X-Firebase-ETag", "true")])
        #expect(tagged.status == 200)
        let etag = try #require(tagged.header("ETag"))
        #expect(etag == firebaseETag(of: ["v": 1]))
        #expect(tagged.header("Access-Control-Expose-Headers")?.contains("ETag") == true)

        let unchanged = try api.call("GET", "/e.json", headers: [("if-none-match", etag)])
        #expect(unchanged.status == 304)
        #expect(unchanged.body.isEmpty)
        #expect(unchanged.header("ETag") == etag)

        _ = try api.call("PUT", "/e/v.json", body: "2")
        let changed = try api.call("GET", "/e.json", headers: [("if-none-match", etag)])
        #expect(changed.status == 200)
        #expect(changed.json == ["v": 2])
        #expect(changed.header("ETag") == firebaseETag(of: ["v": 2]))
    }

    @Test func ifMatch() throws {
        let api = try APIFixture()
        defer { api.shutdown() }
        _ = try api.call("PUT", "/t.json", body: #"{"count":1}"#)

        // The transaction loop of firebase-admin: a stale ETag gets 412 with the current state.
        let stale = try api.call("PUT", "/t.json", headers: [("if-match", "stale")], body: #"{"count":99}"#)
        #expect(stale.status == 412)
        #expect(stale.json == ["count": 1])
        #expect(stale.header("Content-Type") == Self.jsonType)
        let current = try #require(stale.header("ETag"))
        #expect(current == firebaseETag(of: ["count": 1]))
        #expect(try api.call("GET", "/t.json").json == ["count": 1])

        let retry = try api.call("PUT", "/t.json", headers: [("if-match", current)], body: #"{"count":2}"#)
        #expect(retry.status == 200)
        #expect(retry.json == ["count": 2])
        let next = try #require(retry.header("ETag"))
        #expect(next == firebaseETag(of: ["count": 2]))
        #expect(try api.call("GET", "/t.json").header("ETag") == next)

        // The old tag no longer matches, for DELETE and PATCH as well.
        #expect(try api.call("DELETE", "/t.json", headers: [("if-match", current)]).status == 412)
        #expect(try api.call("PATCH", "/t.json", headers: [("if-match", current)], body: #"{"x":1}"#).status == 412)
        #expect(try api.call("DELETE", "/t.json", headers: [("if-match", next)]).status == 200)

        // An absent value has the tag clients already use.
        let create = try api.call("PUT", "/fresh.json", headers: [("if-match", "null_etag")], body: "1")
        #expect(create.status == 200)
        #expect(try api.call("PUT", "/fresh.json", headers: [("if-match", "null_etag")], body: "2").status == 412)
    }

    @Test func serverValues() throws {
        let api = try APIFixture()
        defer { api.shutdown() }
        let before = Date().timeIntervalSince1970 * 1000
        let put = try api.call("PUT", "/meta/updated.json", body: #"{".sv":"timestamp"}"#)
        let after = Date().timeIntervalSince1970 * 1000
        #expect(put.status == 200)
        let stamp = try #require(try api.call("GET", "/meta/updated.json").json?.numberValue)
        #expect(stamp >= before.rounded(.down) && stamp <= after.rounded(.up))
        #expect(put.json?.numberValue == stamp)

        _ = try api.call("PATCH", "/meta.json", body: #"{"n":{".sv":{"increment":5}},"at":{".sv":"timestamp"}}"#)
        _ = try api.call("PATCH", "/meta.json", body: #"{"n":{".sv":{"increment":2}}}"#)
        #expect(try api.call("GET", "/meta/n.json").json == 7)
        #expect(try api.call("GET", "/meta/at.json").json?.numberValue != nil)
        #expect(try api.call("PUT", "/meta/bad.json", body: #"{".sv":"nonsense"}"#).status == 400)
    }

    @Test func preflightAndUnknownMethods() throws {
        let api = try APIFixture()
        defer { api.shutdown() }
        let options = try api.call("OPTIONS", "/a.json", headers: [("Origin", "http://localhost:3000")], auth: false)
        #expect(options.status == 204)
        #expect(options.header("Access-Control-Allow-Origin") == "*")
        #expect(options.header("Access-Control-Allow-Methods")?.contains("PATCH") == true)
        let unknown = try api.call("BREW", "/a.json")
        #expect((400..<500).contains(unknown.status))
    }
}
