import Crypto
import Foundation
import Testing
import TestSupport
import Tree
@testable import Sync
@testable import Wire

/// Checks discovery, session and handshake bytes against the vectors printed in Protocol.md.
@Suite("Protocol.md network vectors")
struct ProtocolNetworkVectorTests {
    static let printing = ProcessInfo.processInfo.environment["LANCHAT_PRINT_VECTORS"] != nil

    static func vectors(kind: String) throws -> [[String: String]] { try ProtocolVectors.of(kind: kind) }

    func expectHex(_ actual: [UInt8], _ vector: [String: String], _ field: String) {
        if Self.printing { print("\(vector["name"] ?? "?").\(field): \(Hex.encode(actual))") }
        #expect(Hex.encode(actual) == vector[field], "\(vector["name"] ?? "?") \(field)")
    }

    @Test("network keys and subkeys")
    func networkKeys() throws {
        let vectors = try Self.vectors(kind: "network")
        #expect(!vectors.isEmpty)
        for v in vectors {
            let key = NetworkKey.named(v["network"]!)
            expectHex(key.secret.copyBytes(), v, "key")
            expectHex(key.datagramKey.copyBytes(), v, "datagram-key")
            expectHex(key.sessionPSK.copyBytes(), v, "session-psk")
            #expect(key.fingerprint == v["network-id"])
        }
    }

    /// The `record` hex of the record vector named `name`.
    static func record(named name: String?) throws -> [UInt8] {
        try #require(ProtocolVectors.named(name ?? "")?["record"].flatMap(ProtocolVectors.bytes))
    }

    /// The `live` hex of the live vector named `name`.
    static func live(named name: String?) throws -> [UInt8] {
        try #require(ProtocolVectors.named(name ?? "")?["live"].flatMap(ProtocolVectors.bytes))
    }

    @Test("signed live values: built from their fields, decoded and verified")
    func liveValues() throws {
        let vectors = try Self.vectors(kind: "live")
        #expect(vectors.contains { $0["name"] == "typing" })
        for v in vectors {
            let key = try PrivateKey(seedBytes: Hex.decode(v["seed"]!)!)
            let value = try JSONValue.parse(v["value"]!)
            let live = try LiveValue.signed(by: key, instance: Hex.decode(v["instance"]!)!, version: UInt64(v["version"]!)!,
                                            path: Path(v["path"]!), value: value)
            expectHex(live.encoded(), v, "live")
            let decoded = try LiveValue.decode(try #require(ProtocolVectors.bytes(v["live"] ?? "")))
            #expect(decoded == live && decoded.value == value)
            // The same bytes with one bit of the value changed do not verify.
            var altered = live.encoded()
            altered[altered.count - 67] ^= 1
            #expect(throws: LiveValueError.self) { try LiveValue.decode(altered) }
        }
    }

    @Test("a sealed beacon and a pushed record")
    func datagrams() throws {
        let vectors = try Self.vectors(kind: "datagram")
        #expect(vectors.contains { $0["name"] == "beacon" } && vectors.contains { $0["name"] == "push" })
        for v in vectors {
            let datagram: Datagram
            if v["name"] == "push" {
                datagram = .push(try Self.record(named: v["record-vector"]))
            } else if v["live-vector"] != nil {
                datagram = .live(try Self.live(named: v["live-vector"]))
            } else {
                let author = try PrivateKey(seedBytes: Hex.decode(v["seed"]!)!)
                datagram = .beacon(Beacon(author: author.publicKey, instance: Hex.decode(v["instance"]!)!, port: UInt16(v["port"]!)!,
                                          recordCount: UInt64(v["count"]!)!, fingerprint: Hex.decode(v["fingerprint"]!)!))
            }
            expectHex(datagram.plaintext.item.encoded(), v, "plaintext")
            let key = NetworkKey.named(v["network"]!).datagramKey
            let sealed = datagram.seal(key: key, nonce: Hex.decode(v["nonce"]!)!)
            expectHex(sealed, v, "datagram")
            #expect(Datagram.open(Hex.decode(v["datagram"] ?? "") ?? [], key: key) == datagram)
            #expect(Datagram.open(Hex.decode(v["datagram"] ?? "") ?? [], key: NetworkKey.named("other").datagramKey) == nil)
        }
    }

    @Test("session message frames")
    func sessionFrames() throws {
        let vectors = try Self.vectors(kind: "session")
        #expect(Set(vectors.compactMap { $0["name"] }).isSuperset(of: ["hello", "want", "records", "reconcile", "reconcile-reply"]))
        for v in vectors {
            let message: SessionMessage
            switch v["name"] {
            case "hello":
                let author = try PrivateKey(seedBytes: Hex.decode(v["seed"]!)!)
                message = .hello(author: author.publicKey, instance: Hex.decode(v["instance"]!)!,
                                 recordCount: UInt64(v["count"]!)!, fingerprint: Hex.decode(v["fingerprint"]!)!)
            case "records":
                message = .records([try Self.record(named: v["record-vector"])])
            case "live":
                message = .live([try Self.live(named: v["live-vector"])])
            case "reconcile":
                message = .reconcile(try #require(ProtocolVectors.bytes(v["negentropy"] ?? "")))
            case "reconcile-reply":
                message = .reconcileReply(try #require(ProtocolVectors.bytes(v["negentropy"] ?? "")))
            default:
                message = .want([try Digest32(bytes: Hex.decode(v["id"]!)!)])
            }
            expectHex(message.framed(), v, "frame")
            let body = Array((Hex.decode(v["frame"] ?? "") ?? [0, 0, 0, 0]).dropFirst(4))
            #expect(try SessionMessage.decode(body) == message)
        }
    }

    @Test("the Noise handshake with fixed ephemeral keys")
    func handshake() throws {
        let vectors = try Self.vectors(kind: "handshake")
        #expect(!vectors.isEmpty)
        for v in vectors {
            let network = NetworkKey.named(v["network"]!)
            let initiatorKey = try PrivateKey(seedBytes: Hex.decode(v["initiator-seed"]!)!)
            let responderKey = try PrivateKey(seedBytes: Hex.decode(v["responder-seed"]!)!)
            var initiator = try NoiseHandshake(role: .initiator, localStatic: initiatorKey.x25519(),
                                               psk: network.sessionPSK.copyBytes(), prologue: PeerSession.prologue,
                                               ephemeral: X25519PrivateKey(bytes: Hex.decode(v["initiator-ephemeral"]!)!))
            var responder = try NoiseHandshake(role: .responder, localStatic: responderKey.x25519(),
                                               psk: network.sessionPSK.copyBytes(), prologue: PeerSession.prologue,
                                               ephemeral: X25519PrivateKey(bytes: Hex.decode(v["responder-ephemeral"]!)!))
            let m1 = try initiator.writeMessage(payload: [])
            _ = try responder.readMessage(m1)
            let m2 = try responder.writeMessage(payload: [])
            _ = try initiator.readMessage(m2)
            let m3 = try initiator.writeMessage(payload: [])
            _ = try responder.readMessage(m3)
            expectHex(m1, v, "message1")
            expectHex(m2, v, "message2")
            expectHex(m3, v, "message3")
            expectHex(initiator.handshakeHash, v, "handshake-hash")
            #expect(initiator.handshakeHash == responder.handshakeHash)
        }
    }
}
