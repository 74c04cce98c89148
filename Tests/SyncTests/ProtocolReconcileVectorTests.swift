import Crypto
import Foundation
import Testing
import TestSupport
@testable import Sync

/// Checks whole reconciliations against the exchanges printed in Protocol.md §10: every message
/// each side sends, in order, and the ids the initiator learns.
@Suite("Protocol.md reconciliation vectors")
struct ProtocolReconcileVectorTests {
    static let printing = ProcessInfo.processInfo.environment["LANCHAT_PRINT_VECTORS"] != nil

    /// Item `i` of the vectors: two items per millisecond from the millisecond 1764441018000, and
    /// the id SHA-256 of `i` in decimal ASCII (§10 states the same rule).
    static func item(_ i: Int) -> NegentropyItem {
        NegentropyItem(timestamp: 115_634_406_555_648_000 + 65_536 * UInt64(i / 2), id: SHA256.hash(Array(String(i).utf8)))!
    }

    static func items(_ vector: [String: String], _ key: String) -> [NegentropyItem] {
        ProtocolVectors.list(vector, key).map { item(Int($0)!) }
    }

    /// Item numbers of `ids`, for comparing with the vector's lists.
    static func numbers(_ ids: [[UInt8]], among universe: [NegentropyItem]) -> [String] {
        ids.map { id in universe.firstIndex { $0.id == id }.map(String.init) ?? Hex.encode(id) }
    }

    @Test("whole reconciliations, message by message, with the ids learned")
    func exchanges() throws {
        let vectors = try ProtocolVectors.of(kind: "reconcile")
        #expect(vectors.count >= 2)
        for v in vectors {
            let name = v["name"] ?? "?"
            let a = Self.items(v, "a"), b = Self.items(v, "b")
            let universe = (0..<1000).map(Self.item)
            var initiator = try NegentropySession(items: a, frameSizeLimit: PeerSession.reconcileFrameLimit)
            var responder = try NegentropySession(items: b, frameSizeLimit: PeerSession.reconcileFrameLimit)
            let expected = ProtocolVectors.numbered(v, "message").map { ProtocolVectors.bytes($0) ?? [] }
            var produced = [try initiator.initiate()]
            var have = [[UInt8]](), need = [[UInt8]]()
            // Each side is handed the vector's bytes rather than the other side's output, so the
            // code is checked to accept exactly what the spec prints, as well as to write it.
            while produced.count < 64 {
                let index = produced.count - 1
                let input = index < expected.count ? expected[index] : produced[index]
                if index % 2 == 0 {
                    let step = try responder.reconcile(input)
                    #expect(step.have.isEmpty && step.need.isEmpty, "a responder learns nothing")
                    produced.append(try #require(step.next))
                } else {
                    let step = try initiator.reconcile(input)
                    have += step.have
                    need += step.need
                    guard let next = step.next else { break }
                    produced.append(next)
                }
            }
            if Self.printing {
                for (index, message) in produced.enumerated() { print("\(name).message-\(index + 1): \(Hex.encode(message))") }
                print("\(name).have: \(Self.numbers(have, among: universe).joined(separator: ", "))")
                print("\(name).need: \(Self.numbers(need, among: universe).joined(separator: ", "))")
            }
            #expect(produced.map(Hex.encode) == expected.map(Hex.encode), "\(name)")
            #expect(Self.numbers(have, among: universe) == ProtocolVectors.list(v, "have"), "\(name)")
            #expect(Self.numbers(need, among: universe) == ProtocolVectors.list(v, "need"), "\(name)")
            // And the differences are the true ones.
            #expect(Set(have) == Set(a.map(\.id)).subtracting(b.map(\.id)), "\(name)")
            #expect(Set(need) == Set(b.map(\.id)).subtracting(a.map(\.id)), "\(name)")
        }
    }
}
