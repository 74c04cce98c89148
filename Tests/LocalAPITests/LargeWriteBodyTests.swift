import Crypto
import Foundation
import HTTP
@testable import LocalAPI
import Node
import Store
import Testing
import Tree
import Wire

/// REST writes above the 16 MiB kept in memory (up to Firebase's 256 MB): spooled to a file as
/// they arrive, written as a streamed large write, answered as the in-memory writes are.
@Suite("Large REST write bodies", .serialized)
struct LargeWriteBodyTests {
    /// `count` children of about `bytes` bytes each, as JSON text, and the value they make.
    static func children(_ count: Int, bytes: Int) -> ([UInt8], JSONValue) {
        var text = [UInt8]()
        text.reserveCapacity(count * (bytes + 40))
        var members = [String: JSONValue]()
        let filler = String(repeating: "x", count: bytes)
        text.append(UInt8(ascii: "{"))
        for i in 0..<count {
            let key = String(format: "k%06d", i)
            if i > 0 { text.append(UInt8(ascii: ",")) }
            text += Array("\"\(key)\":{\"n\":\(i),\"s\":\"\(filler)\"}".utf8)
            members[key] = .object(["n": .number(Double(i)), "s": .string(filler)])
        }
        text.append(UInt8(ascii: "}"))
        return (text, .object(members))
    }

    static func request(_ method: String, _ target: String, body: [UInt8], auth: Bool = true) -> [UInt8] {
        var head = "\(method) \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: \(body.count)\r\n"
        if auth { head += "Authorization: Bearer \(APIFixture.token)\r\n" }
        return Array((head + "\r\n").utf8) + body
    }

    /// A reply's body as JSON, however large.
    static func json(_ reply: HTTPReply) -> JSONValue? {
        try? JSONValue.parse(reply.body, limits: JSONLimits(maxBytes: 256 << 20))
    }

    func spoolFiles(_ api: APIFixture) -> [String] {
        (try? FileManager.default.contentsOfDirectory(atPath: api.directory + "/spool")) ?? []
    }

    @Test("a PUT of 40 MiB is spooled, written as a large write and read back exactly; the spool is emptied")
    func put40MiB() throws {
        let api = try APIFixture()
        defer { api.shutdown() }
        let (body, value) = Self.children(41_000, bytes: 1_000)
        #expect(body.count > 40 << 20)
        // The write is read, sorted, encoded and folded before the answer: many seconds in a
        // debug build on a busy machine.
        let client = try RawClient(port: api.port, timeoutSeconds: 180)
        try client.send(Self.request("PUT", "/big.json?print=silent", body: body))
        let reply = try client.readResponse()
        #expect(reply.status == 204, "\(reply)")
        let read = try RawClient(port: api.port, timeoutSeconds: 180)
        try read.send(RawClient.request("GET", "/big.json"))
        #expect(Self.json(try read.readResponse()) == value)
        let large = api.node.queue.sync { api.node.withStoreOnQueue { store, _ in try? store.hasLargeWrites } }
        #expect(large == true)
        #expect(spoolFiles(api).isEmpty)
    }

    @Test("a spooled PATCH echoes its body, a POST names its child, a PUT answers with the location")
    func answers() throws {
        let api = try APIFixture()
        defer { api.shutdown() }
        let (body, value) = Self.children(17_000, bytes: 1_000)
        #expect(body.count > 16 << 20)
        let client = try RawClient(port: api.port, timeoutSeconds: 60)
        try client.send(Self.request("PATCH", "/p.json", body: body))
        let patched = try client.readResponse()
        #expect(patched.status == 200)
        #expect(patched.body == body)
        try client.send(Self.request("POST", "/list.json", body: body))
        let posted = try client.readResponse()
        let name = try #require(posted.json?.objectValue?["name"].flatMap { if case let .string(s) = $0 { s } else { nil } })
        try client.send(Self.request("PUT", "/q.json", body: body))
        let put = try client.readResponse()
        #expect(put.status == 200)
        #expect(Self.json(put) == value)
        try client.send(RawClient.request("GET", "/list/\(name)/k016999/n.json"))
        #expect(try client.readResponse().json == .number(16_999))
        try client.send(RawClient.request("GET", "/p/k000007.json"))
        #expect(try client.readResponse().json == .object(["n": 7, "s": .string(String(repeating: "x", count: 1_000))]))
        #expect(spoolFiles(api).isEmpty)
    }

    @Test("a spooled body that is not valid JSON, breaks a rule or is not permitted is refused as in memory, nothing stored")
    func refusals() throws {
        let api = try APIFixture()
        defer { api.shutdown() }
        // Each large body has a small twin with the same fault, which the in-memory path answers.
        func twins(_ fault: ([UInt8]) -> [UInt8]) -> ([UInt8], [UInt8]) {
            (fault(Self.children(17_000, bytes: 1_000).0), fault(Self.children(3, bytes: 10).0))
        }
        let other = try PrivateKey().publicKey.userID
        let cases: [(String, String, ([UInt8], [UInt8]), Int)] = [
            ("PUT", "/t.json", twins { Array($0.dropLast()) }, 400),
            ("PUT", "/t.json", twins { var b = $0; b.replaceSubrange(2..<3, with: Array("$".utf8)); return b }, 400),
            ("PUT", "/t.json", twins { var b = $0; b.replaceSubrange(2..<3, with: Array("\\u0000".utf8)); return b }, 400),
            ("PUT", "/t.json", twins { $0 + Array("x".utf8) }, 400),
            ("PATCH", "/t.json", twins { Array("[".utf8) + $0 + Array("]".utf8) }, 400),
            ("PATCH", "/t.json", twins { var b = $0; b.replaceSubrange(1..<1, with: Array("\"a\":1,\"a/b\":2,".utf8)); return b }, 400),
            ("PUT", "/users/\(other).json", twins { $0 }, 403),
        ]
        let client = try RawClient(port: api.port, timeoutSeconds: 60)
        for (method, target, (large, small), status) in cases {
            let inMemory = try api.call(method, target, body: String(decoding: small, as: UTF8.self))
            #expect(inMemory.status == status, "\(method) \(target) in memory: \(inMemory)")
            try client.send(Self.request(method, target, body: large))
            let reply = try client.readResponse()
            #expect(reply.status == status, "\(method) \(target): \(reply)")
            #expect(reply.body == inMemory.body, "\(method) \(target): \(reply) vs \(inMemory)")
        }
        try client.send(RawClient.request("GET", "/t.json"))
        #expect(try client.readResponse().json == .null)
        #expect(spoolFiles(api).isEmpty)
    }

    @Test("over 256 MiB is 413 at once; without the token a large body is 413 too, and nothing is spooled")
    func limits() throws {
        let api = try APIFixture()
        defer { api.shutdown() }
        let client = try api.client()
        try client.send("PUT /big.json HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(APIFixture.token)\r\nContent-Length: \(256 * 1024 * 1024 + 1)\r\n\r\n")
        #expect(try client.readResponse().status == 413)
        let stranger = try api.client()
        try stranger.send("PUT /big.json HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: \(20 * 1024 * 1024)\r\n\r\n")
        #expect(try stranger.readResponse().status == 413)
        let storage = try api.client()
        try storage.send("PUT /.lanchat/anything.json HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(APIFixture.token)\r\nContent-Length: \(20 * 1024 * 1024)\r\n\r\n")
        #expect(try storage.readResponse().status == 413)
        #expect(spoolFiles(api).isEmpty)
    }

    @Test("a client gone in the middle of a large body leaves no spool file")
    func abandoned() throws {
        let api = try APIFixture()
        defer { api.shutdown() }
        let client = try api.client()
        try client.send("PUT /big.json HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(APIFixture.token)\r\nContent-Length: \(20 * 1024 * 1024)\r\n\r\n")
        try client.send([UInt8](repeating: 0x20, count: 4 << 20))
        // The node has taken the bytes (and so spooled them) once it answers on another connection.
        _ = try api.call("GET", "/x.json")
        #expect(spoolFiles(api).count == 1)
        client.close()
        _ = try api.call("GET", "/x.json")
        var waited = 0
        while !spoolFiles(api).isEmpty, waited < 200 {
            // The close is seen on the node's queue; each call is one turn of it.
            _ = try api.call("GET", "/x.json")
            waited += 1
        }
        #expect(spoolFiles(api).isEmpty)
    }
}
