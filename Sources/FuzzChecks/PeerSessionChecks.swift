import Crypto
import Sync
import Tree
import Wire

/// A node's records in memory, as `PeerSession` asks for them.
final class FuzzRecordSource: RecordSource {
    let records: [Digest32: [UInt8]]
    let items: NegentropySortedItems

    init(count: Int) {
        let signer = try! PrivateKey(seedBytes: [UInt8](repeating: 3, count: 32))
        var records = [Digest32: [UInt8]]()
        var items = [NegentropyItem]()
        for index in 0..<count {
            let clock = UInt64(1_700_000_000_000 + index / 2) << 16
            let path = try! Path(segments: ["fuzz", String(index)])
            let record = try! Record.make(body: .write([WritePair(path: path, value: .string("record \(index)"))]),
                                          clock: clock, signer: signer)
            records[record.id] = record.encoded
            items.append(NegentropyItem(timestamp: clock, id: record.id.bytes)!)
        }
        self.records = records
        self.items = NegentropySortedItems(items)
    }

    /// Two chunks the source holds, to answer `wantChunks`.
    let chunks: [Digest32: [UInt8]] = Dictionary(uniqueKeysWithValues: (0..<2).map { index in
        let bytes = [UInt8](repeating: UInt8(index), count: 5_000)
        return (BLAKE2b.digest256(bytes), bytes)
    })

    func chunk(_ hash: Digest32) -> [UInt8]? { chunks[hash] }
    func reconciliationItems() -> NegentropySortedItems { items }
    func records(_ ids: [Digest32]) -> [[UInt8]] { ids.compactMap { records[$0] } }
    func summary() -> (count: UInt64, fingerprint: [UInt8]) { (UInt64(records.count), [UInt8](repeating: 0, count: 16)) }
}

/// The whole session state machine (Protocol.md §8), fed by a peer that completed a real
/// handshake with fixed keys, so fuzz input reaches the message dispatch.
///
/// Input: a mode byte, a cut byte, then the payload. Mode 0: the payload is raw connection
/// bytes sent to an accepting session before the handshake. Modes 1-3: a session that dialled
/// the peer has done the handshake (1: both hellos exchanged;
/// 2: only the session's hello sent; 3: established and the session has started a reconciliation
/// round), and the payload is the decrypted stream, encrypted by the peer into transport messages.
/// With bit 0x80 the payload goes to the connection raw, unencrypted.
///
/// Invariants: everything the session sends decrypts and decodes as well-formed frames and
/// messages within their limits, with no record twice in one batch; it reports records only
/// once established, establishes only the proven peer, and sends nothing after it closed.
public enum PeerSessionChecks {
    /// The fuzzer's side of a session.
    struct Peer {
        var session: PeerSession
        var transport: NoiseTransport?
        var frames = FrameReader()
        var established = false
        var reconciling = false
        /// Chunks sent in answer to the current input.
        var chunksSent = Set<Digest32>()
    }

    nonisolated(unsafe) static let source = FuzzRecordSource(count: 40)
    static let network = NetworkKey.named("fuzz")
    static let nodeIdentity = try! PrivateKey(seedBytes: [UInt8](repeating: 1, count: 32))
    static let peerIdentity = try! PrivateKey(seedBytes: [UInt8](repeating: 2, count: 32))
    static let peerInstance = [UInt8](repeating: 2, count: 8)

    static func fresh() -> Peer {
        Peer(session: PeerSession(role: .responder, identity: nodeIdentity, instance: [UInt8](repeating: 1, count: 8), networkKey: network))
    }

    /// Snapshots after the handshake: [established, no peer hello yet, established with a round].
    /// The session in them dialled the fuzzer's peer, since only the dialler starts rounds (§8.3).
    nonisolated(unsafe) static let snapshots: [Peer] = {
        var peer = Peer(session: PeerSession(role: .initiator, identity: nodeIdentity, instance: [UInt8](repeating: 1, count: 8),
                                             networkKey: network))
        var handshake = try! NoiseHandshake(role: .responder, localStatic: peerIdentity.x25519(),
                                            psk: network.sessionPSK.copyBytes(), prologue: PeerSession.prologue)
        let m1 = noiseMessages(of: peer.session.start())
        precondition(m1.count == 1, "no first handshake message")
        _ = try! handshake.readMessage(m1[0])
        let m2 = try! handshake.writeMessage(payload: [])
        let afterM2 = peer.session.receive(noiseFrame(m2), from: source)
        // The first Noise message sent is the handshake's third; the rest (the hello) is transport.
        guard case let .send(first)? = afterM2.first, let m3 = noiseMessages(of: [.send(first)]).first else {
            preconditionFailure("no third handshake message")
        }
        _ = try! handshake.readMessage(m3)
        peer.transport = try! handshake.split()
        var rest = Array(afterM2.dropFirst())
        if first.count > 2 + m3.count { rest.insert(.send(Array(first[(2 + m3.count)...])), at: 0) }
        _ = try! handle(rest, &peer, .peerSession)
        let noHello = peer
        let hello = SessionMessage.hello(author: peerIdentity.publicKey, instance: peerInstance, recordCount: 3,
                                         fingerprint: [UInt8](repeating: 7, count: 16)).framed()
        _ = try! handle(peer.session.receive(encrypt(hello, &peer, sizes: []), from: source), &peer, .peerSession)
        precondition(peer.established && peer.session.isEstablished, "the snapshot session is not established")
        let established = peer
        let round = peer.session.startRound(source: source)
        precondition(!round.isEmpty, "the snapshot session started no round")
        _ = try! handle(round, &peer, .peerSession)
        peer.reconciling = true
        return [established, noHello, peer]
    }()

    static func session(_ input: [UInt8]) throws(FuzzViolation) {
        let t = FuzzTarget.peerSession
        var reader = FuzzInput(input)
        let mode = reader.byte(), cut = Int(reader.byte())
        let payload = reader.rest
        let sizes = cut == 0 ? [] : [cut, 3 * cut + 1]
        var peer = mode & 3 == 0 ? fresh() : snapshots[Int(mode & 3) - 1]
        var closed = false
        if mode & 3 == 0 || mode & 0x80 != 0 {
            for piece in pieces(payload, sizes: sizes) where !closed {
                closed = try handle(peer.session.receive(piece, from: source), &peer, t)
            }
        } else {
            let wire = encrypt(payload, &peer, sizes: sizes)
            for piece in pieces(wire, sizes: [wire.count]) where !closed {
                closed = try handle(peer.session.receive(piece, from: source), &peer, t)
            }
        }
        if closed {
            // The node drops a session at its first close; a closed machine may repeat the close
            // but must not send, report records or establish.
            let after = peer.session.receive(noiseFrame([UInt8](repeating: 0, count: 32)), from: source)
            try require(after.allSatisfy { if case .close = $0 { return true } else { return false } }, t,
                        "a closed session still acts: \(after)")
            try require(peer.session.startRound(source: source).isEmpty, t, "a closed session starts rounds")
        } else if peer.session.isEstablished && !peer.session.isReconciling {
            _ = try handle(peer.session.startRound(source: source), &peer, t)
        }
    }

    static func noiseFrame(_ message: [UInt8]) -> [UInt8] {
        [UInt8(message.count >> 8), UInt8(message.count & 0xFF)] + message
    }

    /// The Noise messages in bytes the session sent (u16be-prefixed).
    static func noiseMessages(of actions: [PeerSession.Action]) -> [[UInt8]] {
        var out = [[UInt8]]()
        for case let .send(bytes) in actions {
            var offset = 0
            while offset + 2 <= bytes.count {
                let length = Int(bytes[offset]) << 8 | Int(bytes[offset + 1])
                guard offset + 2 + length <= bytes.count else { break }
                out.append(Array(bytes[offset + 2..<offset + 2 + length]))
                offset += 2 + length
            }
        }
        return out
    }

    /// The peer encrypts a plaintext stream into transport messages cut at `sizes`.
    static func encrypt(_ stream: [UInt8], _ peer: inout Peer, sizes: [Int]) -> [UInt8] {
        var out = [UInt8]()
        let cut = sizes.map { min($0, NoiseTransport.maxPlaintextLength) }
        for piece in pieces(stream, sizes: cut.isEmpty ? [NoiseTransport.maxPlaintextLength] : cut) {
            out += noiseFrame(try! peer.transport!.encrypt(piece))
        }
        return out
    }

    /// Checks the session's actions; returns whether it closed.
    static func handle(_ actions: [PeerSession.Action], _ peer: inout Peer, _ t: FuzzTarget) throws(FuzzViolation) -> Bool {
        peer.chunksSent = []
        for (index, action) in actions.enumerated() {
            switch action {
            case let .send(bytes):
                try checkSent(bytes, &peer, t)
            case let .established(author, _, _, _):
                try require(!peer.established, t, "established twice")
                // §8.2: the author is an identity whose X25519 form is the proven static key. Two
                // Ed25519 keys (P and -P, differing in the sign bit) share one X25519 form, and
                // whoever holds one can sign as the other, so both count as proven.
                try require((try? author.x25519()) == peerIdentity.x25519().publicKey, t,
                            "established an identity the handshake did not prove: \(hex(author.bytes))")
                peer.established = true
            case let .received(records):
                try require(peer.established, t, "records reported before the session was established")
                try require(!records.isEmpty, t, "an empty records report")
            case .liveReceived:
                try require(peer.established, t, "live values reported before the session was established")
            case .chunkReceived, .chunksMissing:
                try require(peer.established, t, "chunk events before the session was established")
            case .roundComplete:
                try require(peer.reconciling, t, "a round completed that the session never started")
                peer.reconciling = false
            case .close:
                try require(index == actions.count - 1, t, "actions after close")
                return true
            }
        }
        return false
    }

    /// What the session sends: Noise messages of legal size that decrypt, carrying frames of
    /// well-formed messages.
    static func checkSent(_ bytes: [UInt8], _ peer: inout Peer, _ t: FuzzTarget) throws(FuzzViolation) {
        var offset = 0
        while offset < bytes.count {
            try require(bytes.count - offset >= 2, t, "a partial Noise length prefix was sent")
            let length = Int(bytes[offset]) << 8 | Int(bytes[offset + 1])
            try require(length >= 16 && bytes.count - offset - 2 >= length, t, "a Noise message of \(length) bytes was sent")
            let message = Array(bytes[offset + 2..<offset + 2 + length])
            offset += 2 + length
            guard peer.transport != nil else { continue }  // handshake messages
            let plaintext: [UInt8]
            do { plaintext = try peer.transport!.decrypt(message) } catch {
                throw FuzzViolation(target: t.rawValue, message: "the session sent a message that does not decrypt: \(error)")
            }
            let bodies: [[UInt8]]
            do { bodies = try peer.frames.push(plaintext) } catch {
                throw FuzzViolation(target: t.rawValue, message: "the session sent a bad frame: \(error)")
            }
            for body in bodies {
                guard let decoded = try? SessionMessage.decode(body) else {
                    throw FuzzViolation(target: t.rawValue, message: "the session sent a malformed message: \(hex(body.prefix(64)))")
                }
                switch decoded {
                case let .reconcile(m), let .reconcileReply(m):
                    try require(m.count <= PeerSession.reconcileFrameLimit, t, "a reconcile message of \(m.count) bytes was sent")
                case let .records(records):
                    try require(Set(records).count == records.count, t, "a records batch repeats a record")
                    try require(records.allSatisfy { record in source.records.values.contains(record) }, t,
                                "the session sent a record it does not hold")
                case let .chunk(hash, bytes):
                    try require(source.chunks[hash] == bytes, t, "the session sent a chunk it does not hold")
                    try require(peer.chunksSent.insert(hash).inserted, t, "one request made the session send a chunk twice")
                case .hello, .want, .wantChunks, .noChunks, .live:
                    break
                }
            }
        }
    }
}
