import Crypto
@testable import LocalAPI
import Private
import Testing
import Tree
import Wire

/// `/.lanchat/groups` and `/.lanchat/dm`: private conversations made and changed through the node,
/// as the web chat does, with a clear refusal (and nothing written) for what may not be done.
@Suite("Local API: private groups and direct conversations")
struct GroupEndpointTests {
    /// The members' user ids of `conversation` as the node answers them.
    static func members(_ api: APIFixture, _ conversation: String) throws -> Set<String> {
        guard case let .array(items)? = try api.call("GET", "/.lanchat/groups/\(conversation)").json?["members"] else { return [] }
        return Set(items.compactMap { if case let .string(uid)? = $0["uid"] { uid } else { nil } })
    }

    /// The number of records the node stores: a refused request must not add one.
    static func recordCount(_ api: APIFixture) -> Int { api.node.queue.sync { api.node.statusOnQueue().records } }

    @Test("the creator makes a group, adds and removes members, and cannot leave or be refused quietly")
    func createAndChange() throws {
        let api = try APIFixture()
        defer { api.shutdown() }
        let me = api.node.userID
        let bob = PrivateKey().publicKey.userID, carol = PrivateKey().publicKey.userID

        let created = try api.call("POST", "/.lanchat/groups", body: #"{"title":"Plans","members":["\#(bob)"]}"#)
        #expect(created.status == 200)
        guard case let .string(id)? = created.json?["id"] else { Issue.record("no id: \(created)"); return }
        #expect(id.hasPrefix("g_"))
        let info = try api.call("GET", "/.lanchat/groups/\(id)").json
        #expect(info?["title"] == "Plans" && info?["creator"] == .string(me) && info?["direct"] == false)
        #expect(try Self.members(api, id) == [me, bob])
        #expect(try api.call("GET", "/.lanchat/conversations").json?[id]?["private"] == true)

        #expect(try api.call("POST", "/.lanchat/groups/\(id)/members", body: #"{"add":["\#(carol)"]}"#).status == 200)
        #expect(try Self.members(api, id) == [me, bob, carol])
        let removed = try api.call("POST", "/.lanchat/groups/\(id)/members", body: #"{"remove":"\#(bob)"}"#)
        #expect(removed.status == 200)
        #expect(try Self.members(api, id) == [me, carol])

        // Refused, writing nothing.
        let before = Self.recordCount(api)
        #expect(try api.call("POST", "/.lanchat/groups/\(id)/leave").status == 403)
        #expect(try api.call("POST", "/.lanchat/groups/\(id)/members", body: #"{"remove":["\#(me)"]}"#).status == 403)
        #expect(try api.call("POST", "/.lanchat/groups", body: "not json").status == 400)
        #expect(try api.call("POST", "/.lanchat/groups", body: #"{"title":7}"#).status == 400)
        #expect(try api.call("POST", "/.lanchat/groups", body: #"{"title":"x","members":["nobody"]}"#).status == 400)
        #expect(try api.call("POST", "/.lanchat/groups", body: #"{"title":"x","members":[1]}"#).status == 400)
        #expect(try api.call("POST", "/.lanchat/groups", body: #"{"title":"x","history":"yes"}"#).status == 400)
        #expect(try api.call("POST", "/.lanchat/groups", body: #"{"title":"\#(String(repeating: "t", count: 300))"}"#).status == 403)
        #expect(try api.call("POST", "/.lanchat/groups/\(id)/members", body: "{}").status == 400)
        #expect(try api.call("POST", "/.lanchat/groups/\(id)/members", body: #"{"add":["bad"]}"#).status == 400)
        #expect(try api.call("POST", "/.lanchat/groups/g_AAAAAAAAAAAAAAAAAAAA/members", body: #"{"add":["\#(bob)"]}"#).status == 404)
        #expect(try api.call("POST", "/.lanchat/groups/g_AAAAAAAAAAAAAAAAAAAA/leave").status == 404)
        #expect(try api.call("GET", "/.lanchat/groups/general").status == 404)
        #expect(try api.call("GET", "/.lanchat/groups").status == 405)
        #expect(try api.call("DELETE", "/.lanchat/groups/\(id)").status == 405)
        #expect(try api.call("GET", "/.lanchat/groups/\(id)/leave").status == 405)
        #expect(try api.call("POST", "/.lanchat/groups/\(id)/other").status == 404)
        #expect(try api.call("POST", "/.lanchat/groups", body: #"{"title":"x"}"#, auth: false).status == 401)
        #expect(Self.recordCount(api) == before)
        #expect(try Self.members(api, id) == [me, carol])
    }

    @Test("a direct conversation has one id for both users, made once")
    func direct() throws {
        let api = try APIFixture()
        defer { api.shutdown() }
        let bob = PrivateKey().publicKey.userID
        let first = try api.call("POST", "/.lanchat/dm/\(bob)")
        guard case let .string(id)? = first.json?["id"] else { Issue.record("no id: \(first)"); return }
        #expect(id.hasPrefix("d_"))
        let records = Self.recordCount(api)
        #expect(try api.call("POST", "/.lanchat/dm/\(bob)").json?["id"] == .string(id))
        #expect(Self.recordCount(api) == records, "opening it again keyed it again")
        let info = try api.call("GET", "/.lanchat/groups/\(id)").json
        #expect(info?["direct"] == true && info?["creator"] == .null)
        #expect(try Self.members(api, id) == [api.node.userID, bob])
        #expect(try api.call("POST", "/.lanchat/groups/\(id)/leave").status == 403)
        #expect(try api.call("POST", "/.lanchat/groups/\(id)/members", body: #"{"add":["\#(PrivateKey().publicKey.userID)"]}"#).status == 403)
        #expect(try api.call("POST", "/.lanchat/dm/\(api.node.userID)").status == 400)
        #expect(try api.call("POST", "/.lanchat/dm/nobody").status == 400)
        #expect(try api.call("GET", "/.lanchat/dm/\(bob)").status == 405)
    }

    @Test("a member who did not create the group cannot change its members, and can leave it")
    func memberNotCreator() throws {
        let api = try APIFixture()
        defer { api.shutdown() }
        let creator = PrivateKey()
        let me = try PublicKey(userID: api.node.userID)
        // The creator's key record, arriving as from a peer.
        let salt = [UInt8](repeating: 7, count: PrivateLimits.saltBytes)
        let id = ConversationID.group(creator: creator.publicKey, salt: salt)
        let meta = GroupMeta(title: "Theirs", members: [creator.publicKey, me])
        let body = KeySchedule.makeKeyBody(conversation: id, epoch: 1, salt: salt, key: EpochKey(), meta: meta, author: creator.publicKey,
                                           recipients: [try creator.publicKey.x25519(), try me.x25519()])
        let record = try Record.make(body: .groupKey(body), clock: 1_700_000_000_000 << 16, signer: creator)
        try api.node.write { store, _ in _ = try store.ingest([record], nowMillis: 1_800_000_000_000) }
        #expect(try Self.members(api, id) == [creator.publicKey.userID, me.userID])

        let before = Self.recordCount(api)
        let refused = try api.call("POST", "/.lanchat/groups/\(id)/members", body: #"{"remove":["\#(creator.publicKey.userID)"]}"#)
        #expect(refused.status == 403 && refused.json?["error"] == "Only the group's creator can change its members")
        #expect(try api.call("POST", "/.lanchat/groups/\(id)/members", body: #"{"add":["\#(PrivateKey().publicKey.userID)"]}"#).status == 403)
        #expect(Self.recordCount(api) == before)

        #expect(try api.call("POST", "/.lanchat/groups/\(id)/leave").status == 200)
        #expect(Self.recordCount(api) == before + 1)
        #expect(try !Self.members(api, id).contains(me.userID))
        #expect(try api.call("POST", "/.lanchat/groups/\(id)/leave").status == 403)
    }

    @Test("a body of 64 KiB is read; one byte more is refused with 413")
    func oversizedBody() throws {
        let api = try APIFixture()
        defer { api.shutdown() }
        func body(_ size: Int) -> String {
            let head = #"{"title":"Big","pad":""#, tail = #""}"#
            return head + String(repeating: "p", count: size - head.utf8.count - tail.utf8.count) + tail
        }
        #expect(body(GroupEndpoints.maxBody).utf8.count == 64 * 1024)
        #expect(try api.call("POST", "/.lanchat/groups", body: body(64 * 1024)).status == 200)
        #expect(try api.call("POST", "/.lanchat/groups", body: body(64 * 1024 + 1)).status == 413)
    }
}
