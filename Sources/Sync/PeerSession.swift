import Crypto
import Wire

/// What a session needs from its node, asked synchronously: the node's record set for
/// reconciliation and record bytes by id. The node answers from its store; tests answer from
/// memory. (No IO happens here: the node owns the store and calls in on its own queue.)
public protocol RecordSource {
    /// A snapshot of every held record as (clock, id), for Negentropy.
    func reconciliationItems() -> NegentropySortedItems
    /// The encodings of the records with these ids that are held (unknown ids are skipped).
    func records(_ ids: [Digest32]) -> [[UInt8]]
    /// Count and whole-set fingerprint, for the hello message.
    func summary() -> (count: UInt64, fingerprint: [UInt8])
    /// A held chunk's bytes, to serve a peer's `wantChunks`.
    func chunk(_ hash: Digest32) -> [UInt8]?
    /// Calls `body` with a held chunk's bytes, valid only during the call, and returns whether
    /// the chunk is held. The session copies them straight into its output; a source that keeps
    /// chunks elsewhere than in arrays (the node's store) saves a copy of every chunk served.
    func withChunk(_ hash: Digest32, _ body: (UnsafeRawBufferPointer) -> Void) -> Bool
}

extension RecordSource {
    public func chunk(_ hash: Digest32) -> [UInt8]? { nil }

    public func withChunk(_ hash: Digest32, _ body: (UnsafeRawBufferPointer) -> Void) -> Bool {
        guard let bytes = chunk(hash) else { return false }
        bytes.withUnsafeBytes(body)
        return true
    }
}

/// One session with a peer, as a state machine: bytes from the TCP connection in, bytes to send
/// and events for the node out (Protocol.md §8). It runs the Noise handshake, checks the peer's
/// identity, then reconciles record sets with Negentropy and moves the missing records both ways.
public struct PeerSession {
    public enum Role: Sendable { case initiator, responder }

    /// What the node must do after an input.
    public enum Action: Equatable {
        /// Write these bytes to the connection.
        case send([UInt8])
        /// The peer proved its identity (and is a member of the network).
        case established(author: PublicKey, instance: [UInt8], recordCount: UInt64, fingerprint: [UInt8])
        /// Records received from the peer, still to be verified and stored.
        case received([[UInt8]])
        /// A reconciliation round this side started has finished: the peer lacked `sent` records
        /// and we asked for `requested`.
        case roundComplete(sent: Int, requested: Int)
        /// A chunk the peer sent, still to be checked against its hash and stored.
        case chunkReceived(Digest32, [UInt8])
        /// Chunks the peer says it does not hold.
        case chunksMissing([Digest32])
        /// Live values the peer sent (Protocol.md §8.2), still to be decoded and verified.
        case liveReceived([[UInt8]])
        /// Close the connection; the peer broke the protocol (or failed the handshake) if `misbehaved`.
        case close(reason: String, misbehaved: Bool)
    }

    enum State {
        case handshaking(NoiseHandshake)
        case open(NoiseTransport)
        case closed
    }

    public let role: Role
    /// The identity the peer must prove, when discovery announced one.
    public let expectedAuthor: PublicKey?
    public private(set) var peer: PublicKey?
    private var state: State
    private let localIdentity: PublicKey
    private let localInstance: [UInt8]
    /// Noise messages on TCP: a u16be length each, 16 ..= 65535 bytes (no shorter message exists).
    private var noiseFrames = FrameReader(maxFrameBytes: NoiseTransport.maxMessageLength, minFrameBytes: 16, prefixBytes: 2)
    private var frames = FrameReader()
    /// Stream bytes written since the last input, sealed into Noise messages when it is handled.
    private var output = SessionOutput()
    private var helloSent = false
    private var helloReceived = false
    private var reconciling: NegentropySession?
    private var roundSent = 0
    private var roundRequested = 0
    /// Ids sent as records, and ids asked for with `want`, in the running round. An honest peer
    /// never names an id twice in one round, but a hostile one could repeat a range in every
    /// reply and make this side send the same records (or ask for the same ids) again and again.
    /// Both are cleared when the round ends. `roundOffered` holds at most our own ids;
    /// `roundAsked` is bounded by `maxRoundAskedIDs`.
    private var roundOffered = Set<Digest32>()
    private var roundAsked = Set<Digest32>()
    /// Chunks the peer asked for and not yet answered, in the order asked; from `chunksServed` on.
    private var chunksToServe: [Digest32] = []
    private var chunksServed = 0
    /// Our records that a round found the peer lacks and that are not sent yet, in the order
    /// found; from `offersSent` on. They go out a part at a time as the connection takes them
    /// (`serveOffers`): a peer that holds nothing finds all of our records missing in one reply,
    /// and reading them all at once put the whole record set in memory twice (read, then sealed).
    private var recordsToOffer: [Digest32] = []
    private var offersSent = 0
    /// Records written to the peer so far (pushed, offered in a round, or answering a `want`).
    public private(set) var recordsSent = 0
    /// Whether the last round ended at `maxRoundAskedIDs` or `maxRoundOfferedIDs` with the
    /// reconciliation unfinished, so that a next round has more to find at once.
    public private(set) var roundEndedAtCap = false

    /// The handshake's prologue: binds the protocol version into the handshake hash.
    public static let prologue = Array("lanchat/session/v1".utf8)
    /// Most record bytes sent in answer to one `want`.
    public static let maxWantAnswerBytes = 8 << 20
    /// Negentropy messages are kept well inside one session frame (2 MiB). Why this large: a
    /// round moves at most one message's worth of ids per round trip, and the initiator waits
    /// for each reply on its node's queue, behind whatever batch it is storing. At 60,000 bytes
    /// (about 1,870 ids a reply) a cold sync of a large store ran a round trip per 1,900 records
    /// and the responder summed the fingerprint of its whole remaining set for each one; at
    /// 500,000 bytes a reply carries about 15,600 ids.
    public static let reconcileFrameLimit = 500_000
    /// A round ends once it has asked for this many ids, so that a peer naming ever more ids
    /// cannot grow `roundAsked` without end; the next round carries on where it stopped. (An
    /// honest peer reaches it only in a cold sync of more records than this.)
    public static let maxRoundAskedIDs = 1 << 18
    /// A round also ends once it has found this many of our ids missing on the peer, which
    /// bounds `roundOffered` and `recordsToOffer` (ids, not records) whatever the size of the
    /// record set; the next round offers the rest.
    public static let maxRoundOfferedIDs = 1 << 18
    /// Record bytes sent at once when a reply finds ours missing; the rest wait for the node
    /// (`serveOffers`), which sends them as the connection takes them.
    public static let offerPartBytes = 1 << 20
    /// Ids looked up at a time when answering a `want`: with records of up to 1 MiB, one lookup
    /// holds at most 32 MiB however large the records a member stored.
    static let wantLookupIDs = 32

    /// Whether this side may start reconciliation rounds: only the side that dialled the session
    /// (Protocol.md §8.3), so that one round at most runs on a session and a set never crosses
    /// twice because both ends asked at once.
    public var startsRounds: Bool { role == .initiator }

    public var isEstablished: Bool { helloReceived && peer != nil }
    public var isReconciling: Bool { reconciling != nil }

    public init(role: Role, identity: PrivateKey, instance: [UInt8], networkKey: NetworkKey, expectedAuthor: PublicKey? = nil) {
        self.role = role
        self.expectedAuthor = expectedAuthor
        localIdentity = identity.publicKey
        localInstance = instance
        let handshake = try! NoiseHandshake(role: role == .initiator ? .initiator : .responder,
                                            localStatic: identity.x25519(), psk: networkKey.sessionPSK.copyBytes(),
                                            prologue: Self.prologue)  // the PSK is 32 bytes by construction
        state = .handshaking(handshake)
    }

    /// The initiator's first message; call once right after connecting.
    public mutating func start() -> [Action] {
        guard role == .initiator, case var .handshaking(handshake) = state else { return [] }
        do {
            let message = try handshake.writeMessage(payload: [])
            state = .handshaking(handshake)
            return [.send(NoiseFrame.frame(message))]
        } catch {
            return fail("handshake: \(error)", misbehaved: false)
        }
    }

    /// Bytes from the connection.
    public mutating func receive(_ bytes: [UInt8], from source: RecordSource) -> [Action] {
        bytes.withUnsafeBytes { receive($0, from: source) }
    }

    /// Bytes from the connection, where it read them (copied into the session's buffer).
    public mutating func receive(_ bytes: UnsafeRawBufferPointer, from source: RecordSource) -> [Action] {
        if case .closed = state { return [] }  // nothing more is read (or buffered)
        noiseFrames.append(bytes)
        var actions = [Action]()
        while true {
            let message: ArraySlice<UInt8>
            do {
                guard let next = try noiseFrames.next() else { break }
                message = next
            } catch {
                return actions + fail("\(error)", misbehaved: true)
            }
            actions += handle(message, source: source)
            if case .closed = state { break }
        }
        return actions + flush()
    }

    private mutating func handle(_ message: ArraySlice<UInt8>, source: RecordSource) -> [Action] {
        switch state {
        case .closed:
            return []
        case var .handshaking(handshake):
            do {
                _ = try handshake.readMessage(Array(message))
                var actions = [Action]()
                if !handshake.isComplete {
                    let reply = try handshake.writeMessage(payload: [])
                    actions.append(.send(NoiseFrame.frame(reply)))
                }
                if handshake.isComplete {
                    let transport = try handshake.split()
                    state = .open(transport)
                    actions += sendHello(source)
                } else {
                    state = .handshaking(handshake)
                }
                return actions
            } catch {
                // A wrong network key shows up here, as a message that fails to decrypt.
                return fail("handshake failed: \(error)", misbehaved: true)
            }
        case var .open(transport):
            // Decrypted straight into the frame buffer; frames are decoded where they lie.
            var failure: NoiseError?
            let decrypted = frames.append(count: message.count - ChaChaPoly.tagByteCount) { plaintext in
                message.withUnsafeBytes { ciphertext in
                    do throws(NoiseError) { try transport.decrypt(ciphertext, into: plaintext) } catch { failure = error }
                }
                return failure == nil
            }
            guard decrypted else { return fail("decryption failed: \(failure.map { "\($0)" } ?? "")", misbehaved: true) }
            state = .open(transport)
            var actions = [Action]()
            while true {
                do {
                    guard let body = try frames.next() else { break }
                    actions += try dispatch(SessionMessage.decode(body), source: source)
                } catch {
                    return actions + fail("\(error)", misbehaved: true)
                }
                if case .closed = state { break }
            }
            return actions
        }
    }

    private mutating func dispatch(_ message: SessionMessage, source: RecordSource) throws -> [Action] {
        switch message {
        case let .hello(author, instance, count, fingerprint):
            guard !helloReceived else { return fail("second hello", misbehaved: true) }
            guard case let .open(transport) = state, let x = try? author.x25519(), x == transport.remoteStatic else {
                return fail("hello names an identity the handshake did not prove", misbehaved: true)
            }
            if let expected = expectedAuthor, expected != author {
                return fail("peer is \(author.userID), not the announced \(expected.userID)", misbehaved: true)
            }
            guard author != localIdentity || instance != localInstance else { return fail("connected to itself", misbehaved: false) }
            helloReceived = true
            peer = author
            return [.established(author: author, instance: instance, recordCount: count, fingerprint: fingerprint)]
        case let .reconcile(bytes):
            guard helloReceived else { return fail("reconcile before hello", misbehaved: true) }
            // Only the accepting side should send this (§8.3). A `reconcile` from the side that
            // starts rounds is still answered, not treated as a violation: lanchat nodes before
            // that rule started rounds from both ends, and refusing them would disconnect and
            // ban every not-yet-upgraded peer that accepted a session from an upgraded one.
            var responder = try NegentropySession(items: source.reconciliationItems(), frameSizeLimit: Self.reconcileFrameLimit)
            do {
                let step = try responder.reconcile(bytes)
                return send(.reconcileReply(step.next ?? []))
            } catch NegentropyError.unsupportedVersion {
                return send(.reconcileReply(NegentropySession.unsupportedVersionReply))
            }
        case let .reconcileReply(bytes):
            guard var session = reconciling else { return fail("unexpected reconcile reply", misbehaved: true) }
            let step = try session.reconcile(bytes)
            var actions = [Action]()
            // Each id once per round: see `roundOffered`.
            var have = step.have.compactMap { try? Digest32(bytes: $0) }.filter { roundOffered.insert($0).inserted }
            let need = step.need.compactMap { try? Digest32(bytes: $0) }.filter { roundAsked.insert($0).inserted }
            // Past the round's cap, the ids left over are offered by a later round.
            have = Array(have.prefix(max(0, Self.maxRoundOfferedIDs - roundSent)))
            roundSent += have.count
            roundRequested += need.count
            recordsToOffer += have
            actions += offerRecords(from: source, maxBytes: Self.offerPartBytes)
            actions += send(need, atMost: SessionMessage.maxWantIDs, as: SessionMessage.want)
            if let next = step.next, roundAsked.count < Self.maxRoundAskedIDs, roundSent < Self.maxRoundOfferedIDs {
                reconciling = session
                actions += send(.reconcile(next))
            } else {
                endRound()
                roundEndedAtCap = step.next != nil
                actions.append(.roundComplete(sent: roundSent, requested: roundRequested))
            }
            return actions
        case let .records(records):
            guard helloReceived else { return fail("records before hello", misbehaved: true) }
            return records.isEmpty ? [] : [.received(records)]
        case let .want(ids):
            guard helloReceived else { return fail("want before hello", misbehaved: true) }
            // Each id once: a want that repeats an id must not make us send its record again.
            // Ids of records we do not hold are left out, with no message saying so.
            // Records are added until they total `maxWantAnswerBytes` (the one that reaches it is
            // the last), read a few at a time, so one small message cannot make the node load or
            // queue gigabytes; the rest is asked again in a later round.
            var seen = Set<Digest32>()
            let unique = ids.filter { seen.insert($0).inserted }
            // Gathered before sending, so the answer travels in full-sized `records` messages
            // (the receiver stores one batch per message).
            var answer = [[UInt8]]()
            var answered = 0
            var start = 0
            lookup: while start < unique.count {
                let end = min(start + Self.wantLookupIDs, unique.count)
                for record in source.records(Array(unique[start..<end])) {
                    answer.append(record)
                    answered += record.count
                    if answered >= Self.maxWantAnswerBytes { break lookup }
                }
                start = end
            }
            return sendRecords(answer)
        case let .wantChunks(hashes):
            guard helloReceived else { return fail("wantChunks before hello", misbehaved: true) }
            guard case .open = state else { return [] }
            // Queued, not served here: the node serves them a part at a time (`serveChunks`),
            // so the first bytes go out as soon as one part is sealed.
            var seen = Set<Digest32>()
            chunksToServe.append(contentsOf: hashes.filter { seen.insert($0).inserted })  // each chunk once per request
            return []
        case let .chunk(hash, bytes):
            guard helloReceived else { return fail("chunk before hello", misbehaved: true) }
            return [.chunkReceived(hash, bytes)]
        case let .noChunks(hashes):
            guard helloReceived else { return fail("noChunks before hello", misbehaved: true) }
            return [.chunksMissing(hashes)]
        case let .live(values):
            guard helloReceived else { return fail("live before hello", misbehaved: true) }
            return values.isEmpty ? [] : [.liveReceived(values)]
        }
    }

    /// Chunks the peer asked for that are not answered yet (see `serveChunks`).
    public var chunksToServeCount: Int { chunksToServe.count - chunksServed }

    /// Answers the chunks the peer asked for, in the order asked, until about `maxBytes` of
    /// chunk bytes are written (at least one chunk), and lists the ones not held in a `no chunks`.
    ///
    /// Why in parts: answering a request of 64 chunks at once sealed 4 MiB before writing any of
    /// it, and the peer sat idle meanwhile. The node calls this again while `chunksToServeCount`
    /// is not zero and the connection has taken the previous part.
    public mutating func serveChunks(from source: RecordSource, maxBytes: Int) -> [Action] {
        guard case .open = state else { return [] }
        var missing = [Digest32]()
        var written = 0
        while chunksServed < chunksToServe.count, written < maxBytes {
            let hash = chunksToServe[chunksServed]
            chunksServed += 1
            let held = source.withChunk(hash) { bytes in
                // Room for the whole part at once (it may end up to one chunk past `maxBytes`),
                // taking the chunks left as this one's size, as a file's chunks are.
                if written == 0 { output.reserve(min(maxBytes, (chunksToServe.count - chunksServed) * bytes.count) + bytes.count + 256) }
                sendChunk(hash, bytes)
                written += bytes.count
            }
            if !held { missing.append(hash) }
        }
        // Served hashes are dropped once all are served, or once they are many: a peer that keeps
        // asking before the last request is answered never lets the queue empty.
        if chunksServed == chunksToServe.count {
            chunksToServe.removeAll(keepingCapacity: true)
            chunksServed = 0
        } else if chunksServed >= 1024 {
            chunksToServe.removeFirst(chunksServed)
            chunksServed = 0
        }
        return send(missing, atMost: SessionMessage.maxChunkHashes, as: SessionMessage.noChunks) + flush()
    }

    /// Records a round found the peer lacks that are not sent yet (see `serveOffers`).
    public var recordsToOfferCount: Int { recordsToOffer.count - offersSent }

    /// Sends the records a round found the peer lacks, in the order found, until about
    /// `maxBytes` of them are written (at least one record). The node calls this again while
    /// `recordsToOfferCount` is not zero and the connection has taken the previous part, so the
    /// records in memory at once are one part, whatever the peer lacks.
    public mutating func serveOffers(from source: RecordSource, maxBytes: Int) -> [Action] {
        guard case .open = state, recordsToOfferCount > 0 else { return [] }
        return offerRecords(from: source, maxBytes: maxBytes) + flush()
    }

    private mutating func offerRecords(from source: RecordSource, maxBytes: Int) -> [Action] {
        var part = [[UInt8]]()
        var written = 0
        var lookup = 1
        while offersSent < recordsToOffer.count, written < maxBytes {
            let end = min(offersSent + lookup, recordsToOffer.count)
            for record in source.records(Array(recordsToOffer[offersSent..<end])) {
                part.append(record)
                written += record.count
            }
            offersSent = end
            // As many at a time as the part has room for, judged by the records read so far (at
            // most `wantLookupIDs`), so a part ends near `maxBytes` even with records of 1 MiB.
            let average = max(1, written / max(1, part.count))
            lookup = max(1, min(Self.wantLookupIDs, (maxBytes - written) / average))
        }
        if offersSent == recordsToOffer.count {
            recordsToOffer.removeAll(keepingCapacity: false)
            offersSent = 0
        }
        return sendRecords(part)
    }

    /// Starts a reconciliation round (initiator side of Negentropy). Does nothing while a round
    /// is running, nor on a session this side accepted: only the dialler starts rounds (see
    /// `startsRounds`), so a session runs one round at a time. Nor while records an earlier round
    /// found missing are still being sent: the new round would find them missing again and queue
    /// them a second time.
    public mutating func startRound(source: RecordSource) -> [Action] {
        guard startsRounds, isEstablished, reconciling == nil, recordsToOfferCount == 0, case .open = state else { return [] }
        do {
            var session = try NegentropySession(items: source.reconciliationItems(), frameSizeLimit: Self.reconcileFrameLimit)
            let first = try session.initiate()
            reconciling = session
            roundEndedAtCap = false
            roundSent = 0
            roundRequested = 0
            roundOffered = []
            roundAsked = []
            return send(.reconcile(first)) + flush()
        } catch {
            return fail("reconciliation: \(error)", misbehaved: false)
        }
    }

    private mutating func endRound() {
        reconciling = nil
        roundOffered = []
        roundAsked = []
    }

    /// Asks the peer for chunks (at most `SessionMessage.maxChunkHashes` per message).
    public mutating func requestChunks(_ hashes: [Digest32]) -> [Action] {
        guard isEstablished else { return [] }
        return send(hashes, atMost: SessionMessage.maxChunkHashes, as: SessionMessage.wantChunks) + flush()
    }

    /// Sends live values (encoded `LiveValue`s) to the peer at once, at most
    /// `SessionMessage.maxLiveValues` per message.
    public mutating func sendLive(_ values: [[UInt8]]) -> [Action] {
        guard isEstablished else { return [] }
        var actions = [Action]()
        var start = 0
        while start < values.count {
            let end = min(start + SessionMessage.maxLiveValues, values.count)
            actions += send(.live(Array(values[start..<end])))
            start = end
        }
        return actions + flush()
    }

    /// Pushes new records to the peer at once.
    public mutating func push(_ records: [[UInt8]]) -> [Action] {
        guard isEstablished else { return [] }
        return sendRecords(records) + flush()
    }

    private mutating func sendHello(_ source: RecordSource) -> [Action] {
        guard !helloSent else { return [] }
        helloSent = true
        let (count, fingerprint) = source.summary()
        return send(.hello(author: localIdentity, instance: localInstance, recordCount: count, fingerprint: fingerprint))
    }

    /// Batches records into `records` messages of bounded size.
    private mutating func sendRecords(_ records: [[UInt8]]) -> [Action] {
        guard case .open = state else { return [] }
        recordsSent += records.count
        var actions = [Action]()
        var batch = [[UInt8]]()
        var size = 0
        for record in records {
            if !batch.isEmpty && size + record.count > SessionMessage.recordBatchBytes {
                actions += send(.records(batch))
                batch = []
                size = 0
            }
            batch.append(record)
            size += record.count + 5
        }
        if !batch.isEmpty { actions += send(.records(batch)) }
        return actions
    }

    /// Writes a message to the outgoing stream; it is encrypted and sent when the current input
    /// (or call) has been handled, by `flush`.
    private mutating func send(_ message: SessionMessage) -> [Action] {
        guard case .open = state else { return [] }
        output.append(message.framed())
        return []
    }

    /// Writes `hashes` as messages made by `message`, at most `limit` hashes each.
    private mutating func send(_ hashes: [Digest32], atMost limit: Int, as message: ([Digest32]) -> SessionMessage) -> [Action] {
        var actions = [Action]()
        for start in stride(from: 0, to: hashes.count, by: limit) {
            actions += send(message(Array(hashes[start..<min(start + limit, hashes.count)])))
        }
        return actions
    }

    /// `send(.chunk(hash, bytes))` without encoding the chunk into an intermediate array.
    private mutating func sendChunk(_ hash: Digest32, _ bytes: UnsafeRawBufferPointer) {
        guard case .open = state else { return }
        output.append(SessionMessage.chunkFramePrefix(hash, byteCount: bytes.count))
        output.append(bytes)
    }

    /// Encrypts what was written since the last flush into Noise messages: one `send` action.
    private mutating func flush() -> [Action] {
        guard !output.isEmpty, case var .open(transport) = state else { return [] }
        let bytes: [UInt8]
        do { bytes = try output.seal(with: &transport) } catch { return fail("encryption: \(error)", misbehaved: false) }
        state = .open(transport)
        return [.send(bytes)]
    }

    private mutating func fail(_ reason: String, misbehaved: Bool) -> [Action] {
        // What was written before the failure goes out first, as it would have unbatched.
        var actions = [Action]()
        if !output.isEmpty, case var .open(transport) = state, let bytes = try? output.seal(with: &transport) {
            actions.append(.send(bytes))
        }
        output = SessionOutput()
        chunksToServe = []
        chunksServed = 0
        recordsToOffer = []
        offersSent = 0
        state = .closed
        endRound()
        return actions + [.close(reason: reason, misbehaved: misbehaved)]
    }
}

/// The outer framing of a session on TCP: each Noise message (handshake or transport) is
/// preceded by its length as u16be, as the Noise specification suggests.
enum NoiseFrame {
    static func frame(_ message: [UInt8]) -> [UInt8] {
        [UInt8(message.count >> 8), UInt8(message.count & 0xFF)] + message
    }
}
