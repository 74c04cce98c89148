import Crypto
import Dispatch
import Foundation
@testable import LocalAPI
@testable import Node
import Store
import Sync
import Testing
import Transport
import Tree
import Wire

/// Typing flags and read receipts of private conversations between real nodes on loopback
/// (Protocol.md §11.8): A and B are members, C is not. What A sets shows on B; C checks and
/// relays it, and shows, streams and keeps nothing of it; a forgery is refused; a member removed
/// stops seeing what is sent after.
@Suite("Live state of private conversations", .serialized)
struct PrivateLiveTests {
    static let receiptKey = "-NreceiptKeyOnly4Members"

    /// Creates a group of A and `members` on A, and waits until every node of `nodes` stores its key record.
    static func group(on a: LiveNode, with members: [LiveNode], seenBy nodes: [LiveNode]) throws -> String {
        let list = members.map { "\"\($0.userID)\"" }.joined(separator: ",")
        let created = try a.call("POST", "/.lanchat/groups", body: #"{"title":"Plans","members":[\#(list)]}"#)
        #expect(created.status == 200)
        guard case let .string(id)? = created.json?["id"] else { throw ClientError("no group id: \(created)") }
        #expect(eventually(10) { nodes.allSatisfy { $0.records == a.records } })
        for member in members { #expect(try eventually(5) { try member.call("GET", "/.lanchat/groups/\(id)").status == 200 }) }
        return id
    }

    /// Sealed values `node` could not open and relayed (or dropped as seen).
    static func relayed(_ node: LiveNode) -> Int { node.node.queue.sync { node.node.sealedRelay.rememberedCount } }

    /// The bytes of the live-state file and its write-ahead log.
    static func liveFileBytes(_ node: LiveNode) -> [UInt8] {
        let path = LiveStore.path(forStoreAt: node.directory + "/store.sqlite")
        return ["", "-wal"].flatMap { (try? [UInt8](Data(contentsOf: URL(fileURLWithPath: path + $0)))) ?? [] }
    }

    static func contains(_ haystack: [UInt8], _ needle: String) -> Bool {
        let n = Array(needle.utf8)
        guard haystack.count >= n.count else { return false }
        return (0...(haystack.count - n.count)).contains { haystack[$0..<($0 + n.count)].elementsEqual(n) }
    }

    @Test("A's typing flag and receipt show on B; C (not a member) shows, streams and keeps none; forgeries are refused; B removed sees nothing more")
    func membersOnly() throws {
        let port = try freeUDPPort()
        let nodes = try ["a", "b", "c"].map { try LiveNode(directory: temporaryDirectory("plive-\($0)"), identity: PrivateKey(), discoveryPort: port) }
        let (a, b, c) = (nodes[0], nodes[1], nodes[2])
        defer { for node in nodes { node.stop() } }
        #expect(eventually(10) { nodes.allSatisfy { n in nodes.allSatisfy { $0 === n || n.hears($0) } } })
        let id = try Self.group(on: a, with: [b], seenBy: [b, c])
        let typing = "/conversations/\(id)/typingIndicator/\(a.userID)"
        let receipt = "/conversations/\(id)/readReceipts/\(a.userID)"

        // Event streams of everything under /conversations, on B and on C.
        let streams = try [b, c].map { node -> RawClient in
            let client = try RawClient(port: node.api.address.port)
            #expect(try client.openStream("/conversations.json").status == 200)
            _ = try client.nextChange()
            return client
        }
        let relayedBefore = Self.relayed(c)
        #expect(try a.call("PUT", typing + ".json", body: "true").status == 200)
        #expect(try a.call("PUT", receipt + ".json", body: "\"\(Self.receiptKey)\"").status == 200)
        #expect(try eventually(5) { try b.get(typing + ".json") == .bool(true) && b.get(receipt + ".json") == .string(Self.receiptKey) })
        var typingStreamed = false
        while !typingStreamed {
            let event = try streams[0].nextChange()
            typingStreamed = event.data.contains("typingIndicator") && event.data.contains(a.userID)
        }
        #expect(typingStreamed)

        // C took both (it relays them) and shows nothing of them.
        #expect(eventually(5) { Self.relayed(c) >= relayedBefore + 2 })
        #expect(try c.get(typing + ".json") == .null)
        #expect(try c.get(receipt + ".json") == .null)
        #expect(try c.get("/conversations/\(id).json") == .null)
        #expect(!(try c.call("GET", "/.json").text.contains(Self.receiptKey)))
        #expect(c.node.queue.sync { c.node.liveCountsOnQueue() } == (0, 0))
        // The websocket protocol's get shows the flag on B, nothing on C.
        for (node, expected) in [(b, JSONValue.object([a.userID: true])), (c, JSONValue.null)] {
            let client = try RealtimeClient(port: node.api.address.port)
            _ = try client.message()
            _ = try client.request("gauth", .object(["cred": .string(APIFixture.token)]))
            let got = try client.request("g", ["p": .string("/conversations/\(id)/typingIndicator")])
            #expect(got.objectValue?["d"] == expected, "websocket get on \(node === b ? "B" : "C")")
        }
        // Its stream's next event is a write made after they passed: none of theirs came before.
        #expect(try c.call("PUT", "/conversations/general/marker.json", body: "1").status == 200)
        let next = try streams[1].nextChange()
        #expect(next.json?["path"] == "/general/marker", "C streamed \(next.data)")

        // Receipts are kept on disk sealed: B keeps A's (and C none), and no file holds its key in plain.
        #expect(eventually(5) { ((try? LiveStore(forStoreAt: b.directory + "/store.sqlite").receipts().count) ?? 0) == 1 })
        #expect((try LiveStore(forStoreAt: c.directory + "/store.sqlite").receipts().count) == 0)
        for node in nodes { #expect(!Self.contains(Self.liveFileBytes(node), Self.receiptKey)) }

        // Forgeries, sent to B as datagrams: A's value with a byte of its ciphertext changed; C's
        // own value for the conversation (C is no member); A's ciphertext signed again by C; a
        // plain (unsealed) value of A's at its path. None changes what B shows.
        let held = try #require(a.node.queue.sync { a.node.live.values(of: a.identity.publicKey).first { $0.path.description == typing } })
        let sealed = try #require(held.sealed)
        var tampered = held.encoded()
        tampered[tampered.count - 100] ^= 1
        let byC = try SealedLive.signed(by: c.identity, instance: c.node.instance, version: UInt64.max - 1, conversation: id,
                                        epoch: sealed.epoch, ciphertext: sealed.ciphertext)
        let plain = try LiveValue.signed(by: a.identity, instance: a.node.instance, version: UInt64.max - 1, path: Path(typing),
                                         value: .string("plain"))
        let queue = DispatchQueue(label: "forger")
        let socket = try UDPSocket(bind: try SocketAddress(host: "127.0.0.1", port: 0), queue: queue)
        for bytes in [tampered, byC.encoded(), plain.encoded()] {
            try queue.sync { try socket.send(Datagram.live(bytes).seal(key: NetworkKey.named("live-tests").datagramKey), to: b.node.listenAddress) }
        }
        queue.sync { socket.close() }
        // A change of A's sent after them shows they were handled.
        #expect(try a.call("PUT", typing + ".json", body: "\"marker\"").status == 200)
        #expect(try eventually(5) { try b.get(typing + ".json") == .string("marker") })
        #expect(try b.get("/conversations/\(id)/typingIndicator.json") == .object([a.userID: .string("marker")]))
        #expect(try c.get("/conversations/\(id)/typingIndicator/\(c.userID).json") == .null)
        // C may not write there either.
        #expect(try c.call("PUT", "/conversations/\(id)/typingIndicator/\(c.userID).json", body: "true").status == 403)

        // B removed: from the new epoch's key record on, B shows none of A's values, and what A
        // sets afterwards (sealed under a key B never holds) does not show on B.
        #expect(try a.call("POST", "/.lanchat/groups/\(id)/members", body: #"{"remove":["\#(b.userID)"]}"#).status == 200)
        #expect(eventually(10) { b.records == a.records })
        #expect(try eventually(5) { try b.get(typing + ".json") == .null && b.get(receipt + ".json") == .null })
        let relayedByB = Self.relayed(b)
        #expect(try a.call("PUT", typing + ".json", body: "\"after removal\"").status == 200)
        #expect(eventually(5) { Self.relayed(b) > relayedByB })
        #expect(try b.get(typing + ".json") == .null)
        #expect(try b.get("/conversations/\(id).json")?.objectValue?["typingIndicator"] == nil)
        #expect(eventually(5) { ((try? LiveStore(forStoreAt: b.directory + "/store.sqlite").receipts().count) ?? 1) == 0 })
    }

    @Test("along a line A - C - B with C no member, A's typing flag still reaches B, and C shows none of it")
    func relayedByANonMember() throws {
        func lineNode(_ name: String, peer: LiveNode?) throws -> LiveNode {
            try LiveNode(directory: temporaryDirectory("pline-\(name)"), identity: PrivateKey(), discoveryPort: try freeUDPPort()) { config in
                config.discovery = false
                if let peer { config.manualPeers = [try! SocketAddress(host: "127.0.0.1", port: peer.node.listenAddress.port)] }
            }
        }
        let a = try lineNode("a", peer: nil)
        let c = try lineNode("c", peer: a)
        let b = try lineNode("b", peer: c)
        defer { for node in [a, b, c] { node.stop() } }
        #expect(eventually(10) { c.hears(a) && c.hears(b) })
        #expect(!b.hears(a))
        let id = try Self.group(on: a, with: [b], seenBy: [b, c])
        let typing = "/conversations/\(id)/typingIndicator/\(a.userID)"
        #expect(try a.call("PUT", typing + ".json", body: "true").status == 200)
        #expect(try eventually(5) { try b.get(typing + ".json") == .bool(true) })
        #expect(try c.get(typing + ".json") == .null)
        #expect(c.node.queue.sync { c.node.liveCountsOnQueue() } == (0, 0))
        #expect(try a.call("DELETE", typing + ".json").status == 200)
        #expect(try eventually(5) { try b.get(typing + ".json") == .null })
    }

    @Test("a sealed receipt that arrives before its key record shows once the record does, and again after a restart")
    func receiptBeforeItsKey() throws {
        let a = try LiveNode(directory: temporaryDirectory("plate-a"), identity: PrivateKey(), discoveryPort: try freeUDPPort())
        let b = try LiveNode(directory: temporaryDirectory("plate-b"), identity: PrivateKey(), discoveryPort: try freeUDPPort())
        defer { a.stop(); b.stop() }
        // A and B do not hear each other: the test carries A's datagrams to B, the receipt first.
        let created = try a.call("POST", "/.lanchat/groups", body: #"{"title":"Later","members":["\#(b.userID)"]}"#)
        guard case let .string(id)? = created.json?["id"] else { Issue.record("no group id: \(created)"); return }
        let receipt = "/conversations/\(id)/readReceipts/\(a.userID)"
        #expect(try a.call("PUT", receipt + ".json", body: "\"\(Self.receiptKey)\"").status == 200)
        let sealed = try #require(a.node.queue.sync { a.node.live.receipt(at: try! Path(receipt)) }).encoded()
        let keyRecord = try #require(try a.node.queue.sync {
            try a.node.withStoreOnQueue { store, _ in try store.records(after: 0).map(\.bytes) }
        }.first { (try? Record.decode($0))?.kind == .groupKey })
        let queue = DispatchQueue(label: "carrier")
        let socket = try UDPSocket(bind: try SocketAddress(host: "127.0.0.1", port: 0), queue: queue)
        defer { queue.sync { socket.close() } }
        let key = NetworkKey.named("live-tests").datagramKey
        try queue.sync { try socket.send(Datagram.live(sealed).seal(key: key), to: b.node.listenAddress) }
        #expect(eventually(5) { b.node.queue.sync { !b.node.pendingSealed.isEmpty } })
        #expect(try b.get(receipt + ".json") == .null)
        try queue.sync { try socket.send(Datagram.push(keyRecord).seal(key: key), to: b.node.listenAddress) }
        #expect(try eventually(5) { try b.get(receipt + ".json") == .string(Self.receiptKey) })
        #expect(b.node.queue.sync { b.node.pendingSealed.isEmpty })

        // Kept on disk sealed, it shows again after B's node restarts, with A's node gone.
        #expect(eventually(5) { ((try? LiveStore(forStoreAt: b.directory + "/store.sqlite").receipts().count) ?? 0) == 1 })
        a.stop()
        b.stop()
        let again = try LiveNode(directory: b.directory, identity: b.identity, discoveryPort: try freeUDPPort())
        defer { again.stop() }
        #expect(try again.get(receipt + ".json") == .string(Self.receiptKey))
    }

    @Test("at most 256 sealed values wait for their key records, each at most 30 s")
    func pendingBounds() throws {
        let b = try LiveNode(directory: temporaryDirectory("ppending"), identity: PrivateKey(), discoveryPort: try freeUDPPort())
        defer { b.stop() }
        let author = PrivateKey()
        func sealed(_ version: UInt64) throws -> SealedLive {
            try SealedLive.signed(by: author, instance: [1, 2, 3, 4, 5, 6, 7, 8], version: version, conversation: "g_AAAAAAAAAAAAAAAAAAAA",
                                  epoch: Digest32(bytes: [UInt8](repeating: 3, count: 32)),
                                  ciphertext: [UInt8](repeating: 9, count: SealedLive.ciphertextSizes[0]))
        }
        let values = try (1...257).map { try sealed(UInt64($0)).encoded() }
        b.node.queue.sync {
            for value in values { b.node.receiveLive([value], on: nil) }
            #expect(b.node.pendingSealed.count == Node.maxPendingSealed)
            #expect(b.node.pendingSealed.first?.value.version == 2)
            let arrived = b.node.pendingSealed[0].arrived
            b.node.retryPendingSealed(now: arrived + Node.pendingSealedSeconds - 1)
            #expect(b.node.pendingSealed.count == Node.maxPendingSealed)
            b.node.retryPendingSealed(now: arrived + Node.pendingSealedSeconds + 1)
            #expect(b.node.pendingSealed.isEmpty)
        }
    }
}
