import Crypto
import Foundation
@testable import Node
import Sync
import Testing
import Wire

/// The message limits of Protocol.md §8.2 and §9 on a real node: a member's messages at each
/// limit are taken and its session stays; one past any of them is a protocol violation, and the
/// member is banned by identity, each with a log line that names the limit.
@Suite("Message limits on a real node", .serialized)
struct MessageLimitBanTests {
    static func hashes(_ count: Int, salt: UInt8) -> [Digest32] {
        (0..<count).map { BLAKE2b.digest256([salt, UInt8(truncatingIfNeeded: $0), UInt8(truncatingIfNeeded: $0 >> 8)]) }
    }

    @Test("want, want chunks, no chunks and chunk at their limits are taken; one past each bans the member")
    func messagesAtAndPastTheirLimits() throws {
        try Knobs.withNode { node, log in
            func connected(_ client: RawSessionClient) -> Bool {
                client.isOpen && node.status().peers.contains { $0.connected && $0.userID == client.identity.publicKey.userID }
            }

            // At the limits: nothing here breaks the protocol.
            let honest = try RawSessionClient(to: node.listenAddress, network: CorruptChunkTests.network)
            defer { honest.stop() }
            #expect(CorruptChunkTests.eventually(10) { connected(honest) }, "log: \(log.lines)")
            let asked = Self.hashes(SessionMessage.maxChunkHashes, salt: 1)
            honest.send([
                .want(Self.hashes(SessionMessage.maxWantIDs, salt: 2)),
                .noChunks(Self.hashes(SessionMessage.maxChunkHashes, salt: 3)),
                .chunk(Self.hashes(1, salt: 4)[0], [UInt8](repeating: 7, count: SessionMessage.maxChunkBytes)),
                .wantChunks(asked),
            ])
            // The last one answered means all were read: the node holds none of the chunks.
            #expect(CorruptChunkTests.eventually(10) {
                honest.messages.contains { if case let .noChunks(lacking) = $0 { Set(lacking) == Set(asked) } else { false } }
            }, "log: \(log.lines)")
            #expect(connected(honest) && !honest.closed)

            // One past each: a member each, each banned for it.
            let violations: [(String, [UInt8])] = [
                ("want", SessionMessage.want(Self.hashes(SessionMessage.maxWantIDs + 1, salt: 5)).framed()),
                ("want chunks", SessionMessage.wantChunks(Self.hashes(SessionMessage.maxChunkHashes + 1, salt: 6)).framed()),
                ("no chunks", SessionMessage.noChunks(Self.hashes(SessionMessage.maxChunkHashes + 1, salt: 7)).framed()),
                ("chunk", SessionMessage.chunk(Self.hashes(1, salt: 8)[0], [UInt8](repeating: 7, count: SessionMessage.maxChunkBytes + 1)).framed()),
                ("records", SessionMessage.records([[UInt8]](repeating: [1], count: 19_998)).framed()),
                ("frame", [0x00, 0x20, 0x00, 0x01]),
            ]
            for (what, stream) in violations {
                let member = try RawSessionClient(to: node.listenAddress, network: CorruptChunkTests.network)
                defer { member.stop() }
                #expect(CorruptChunkTests.eventually(10) { connected(member) }, "\(what): log: \(log.lines)")
                member.send(stream: stream)
                let ban = "banned user \(member.identity.publicKey.userID) for 60 s: "
                #expect(CorruptChunkTests.eventually(10) { log.lines.contains { $0.hasPrefix(ban) } }, "\(what) past its limit: log: \(log.lines)")
                #expect(CorruptChunkTests.eventually(10) { member.closed }, "\(what): the session stayed open")
                #expect(node.queue.sync { node.isBanned(member.identity.publicKey) })
            }
            // The member at the limits is still connected, and was never banned.
            #expect(connected(honest))
            #expect(!log.lines.contains { $0.contains(honest.identity.publicKey.userID) && $0.contains("banned") })
        }
    }
}
