import Foundation
@testable import LocalAPI
import Realtime
import Testing
import Tree
import Wire

/// Writes too large for one record (Protocol.md §3.7) made over the websocket, as the SDKs make
/// them: an update of more paths than a record holds and a string past a record's size, each
/// taken as one message, written as one large write, and seen by another client's listen in one
/// change. (Tools/bigvalues-test.sh does Firebase's full sizes between two nodes.)
@Suite("Local API: large writes over the websocket")
struct RealtimeLargeWriteTests {
    /// Its reads wait up to a minute: each write here is megabytes folded as a large write,
    /// which took over the usual 10 s once while hundreds of other tests ran on two cores.
    func authenticated(_ api: APIFixture) throws -> RealtimeClient {
        let client = try RealtimeClient(api, timeoutSeconds: 60)
        _ = try client.message()
        #expect(realtimeStatus(try client.request("gauth", .object(["cred": .string(APIFixture.token)]))) == "ok")
        return client
    }

    @Test func anUpdateOfThousandsOfChildrenAndAStringOfMegabytesArriveWholeInOneChange() throws {
        let api = try APIFixture()
        defer { api.shutdown() }
        let writer = try authenticated(api)
        let watcher = try authenticated(api)
        var pushes: [JSONValue] = []
        #expect(realtimeStatus(try watcher.request("q", ["p": "/big", "h": ""], pushes: &pushes)) == "ok")
        #expect(pushes == [RealtimeReply.data(try Path("big"), .null, tag: nil)])

        var members = [String: JSONValue]()
        for i in 0..<3_000 { members[String(format: "c%05d", i)] = ["n": .number(Double(i)), "text": "some words"] }
        let update = JSONValue.object(members)
        #expect(realtimeStatus(try writer.request("m", ["p": "/big/children", "d": update])) == "ok")
        // One change, at the location the update wrote below (its record names no paths: the
        // store tells where its pairs lie), with every child.
        let change = try watcher.message().objectValue?["d"]?.objectValue?["b"]?.objectValue
        #expect(change?["p"] == "big/children")
        #expect(change?["d"]?.objectValue?.count == 3_000)

        let text = String(repeating: "0123456789abcdef", count: 131_072)  // 2 MiB, past a record's 1 MiB
        #expect(realtimeStatus(try writer.request("p", ["p": "/big/text", "d": .string(text)])) == "ok")
        let put = try watcher.message().objectValue?["d"]?.objectValue?["b"]?.objectValue
        #expect(put?["p"] == "big/text" && put?["d"] == .string(text), "a change at \(put?["p"] ?? "?")")

        // Each is one large write (record kind 4), read back whole by REST and by `g`.
        let node = api.node
        let largeWrites = try node.queue.sync {
            try node.withStoreOnQueue { store, _ in
                var count = 0
                try store.forEachRecord { bytes in
                    if (try? Record.decode(bytes, verify: false))?.kind == .largeWrite { count += 1 }
                }
                return count
            }
        }
        #expect(largeWrites == 2)
        #expect(try writer.request("g", ["p": "/big/children"]) == ["s": "ok", "d": update])
        #expect(try api.call("GET", "/big/text.json").body == Array(JSONValue.string(text).serialized().utf8))
    }
}
