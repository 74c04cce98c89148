import Crypto
import Foundation
import HTTP
@testable import LocalAPI
import Store
import Testing
import Tree

/// The local API's limits that the README states, at the limit and one past it: connections at
/// once, the size of one write, the users directory's page, and uploads.
@Suite("Local API: limits", .serialized)
struct APILimitTests {
    static func now() -> UInt64 { UInt64(Date().timeIntervalSince1970 * 1000) }

    @Test("maxConnections connections are served at once; one more is closed, and served once a slot frees")
    func connectionCap() throws {
        let api = try APIFixture(maxConnections: 3)
        defer { api.shutdown() }
        let clients = try (0..<3).map { _ in try api.client() }
        for client in clients {
            try client.send(RawClient.request("GET", "/a.json"))
            #expect(try client.readResponse().status == 200)
        }
        // Past the cap: accepted by the kernel, closed by the server before any request.
        let extra = try api.client()
        #expect(try extra.fill() == false, "a connection past the cap was kept")
        // The others are still served on their kept-alive connections.
        try clients[1].send(RawClient.request("GET", "/a.json"))
        #expect(try clients[1].readResponse().status == 200)
        // One leaves: a new connection gets its slot.
        clients[0].close()
        var served = false
        let deadline = Date().addingTimeInterval(10)
        while !served && Date() < deadline {
            let client = try api.client()
            try? client.send(RawClient.request("GET", "/a.json"))
            served = (try? client.readResponse().status) == 200
            client.close()
            if !served { usleep(50_000) }
        }
        #expect(served)
    }

    @Test("a string of 10 MiB (Firebase's limit) is stored and read back whole; one byte more is refused with 400 and stores nothing")
    func writeSize() throws {
        let api = try APIFixture()
        defer { api.shutdown() }
        let limit = JSONLimits.default.maxStringBytes
        #expect(limit == 10 << 20)
        let atLimit = String(repeating: "x", count: limit)
        #expect(try api.call("PUT", "/big.json?print=silent", body: "\"" + atLimit + "\"", timeoutSeconds: 300).status == 204)
        let refused = try api.call("PUT", "/other.json", body: "\"" + String(repeating: "y", count: limit + 1) + "\"", timeoutSeconds: 300)
        #expect(refused.status == 400)
        #expect(try api.call("GET", "/other.json").text == "null")
        #expect(try api.call("GET", "/big.json", timeoutSeconds: 300).text == "\"" + atLimit + "\"", "the value at the limit stays, whole")
    }

    @Test("an update of 1,001 paths and more is stored as one write; past 262,144 paths it is refused with 400")
    func pathsPerUpdate() throws {
        let api = try APIFixture()
        defer { api.shutdown() }
        func body(_ count: Int) -> String { "{" + (0..<count).map { "\"k\($0)\":\($0)" }.joined(separator: ",") + "}" }
        #expect(try api.call("PATCH", "/u.json?print=silent", body: body(1_000)).status == 204)
        #expect(try api.call("GET", "/u.json?shallow=true").json?.objectValue?.count == 1_000)
        #expect(try api.call("PATCH", "/v.json?print=silent", body: body(5_000), timeoutSeconds: 300).status == 204)
        #expect(try api.call("GET", "/v.json?shallow=true").json?.objectValue?.count == 5_000)
        let refused = try api.call("PATCH", "/w.json", body: body(262_145), timeoutSeconds: 300)
        #expect(refused.status == 400)
        #expect(refused.text.contains("262144"), "\(refused.text.prefix(200))")
        #expect(try api.call("GET", "/w.json").text == "null")
    }

    @Test("users: 20 by default, up to limit=1000; limit=1001 or 0 is refused with 400")
    func usersLimit() throws {
        let api = try APIFixture()
        defer { api.shutdown() }
        for i in 0..<25 {
            let key = PrivateKey()
            try api.node.write { store, _ in
                _ = try store.set(try Path("/users/\(key.publicKey.userID)"),
                                  to: .object(["first_name": .string("User"), "last_name": .string("N\(i)")]),
                                  signer: key, nowMillis: Self.now())
            }
        }
        func count(_ query: String) throws -> Int? {
            guard case let .array(entries)? = try api.call("GET", "/.lanchat/users\(query)").json else { return nil }
            return entries.count
        }
        #expect(NodeEndpoints.defaultUsersLimit == 20 && NodeEndpoints.maxUsersLimit == 1_000)
        #expect(try count("") == 20)
        #expect(try count("?q=user") == 20)
        #expect(try count("?limit=1000") == 25)
        #expect(try count("?q=user&limit=1000") == 25)
        #expect(try count("?limit=1") == 1)
        for bad in ["1001", "0", "-1", "x"] {
            let reply = try api.call("GET", "/.lanchat/users?limit=\(bad)")
            #expect(reply.status == 400, "limit=\(bad): \(reply.text)")
        }
    }

    @Test("an upload of 16 MiB (the request body limit) is stored; one byte more is refused with 413")
    func uploadSize() throws {
        let api = try APIFixture()
        defer { api.shutdown() }
        let limit = HTTPLimits.default.maxBodyBytes
        #expect(limit == 16 << 20 && limit < Store.defaultFileLimit)
        var bytes = StorageTests.png
        bytes += [UInt8](repeating: 0x5A, count: limit - bytes.count)
        let own = "\(api.node.userID)/big.png"
        let stored = try StorageTests.upload(api, own, bytes)
        #expect(stored.status == 200, "\(stored.text)")
        let over = try StorageTests.upload(api, "\(api.node.userID)/over.png", bytes + [0])
        #expect(over.status == 413, "\(over.text)")
        #expect(try api.node.read { try $0.fileInfo(own)?.manifest.size } == UInt64(limit))
        #expect(try api.node.read { try $0.fileInfo("\(api.node.userID)/over.png") } == nil)
    }
}
