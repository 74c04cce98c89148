import Crypto
import Sync
import Tree
import Wire

/// Records, deterministic CBOR, the export stream, datagrams and session frames (Protocol.md
/// §2-§4, §7, §8.2). The common invariant: whatever a decoder accepts re-encodes to exactly the
/// bytes it was given, so one value never has two encodings (a record's keys re-encode in NFC,
/// the one spelling the tree reads them in, §5.1).
public enum WireChecks {
    /// Deterministic CBOR with the default limits and with the tight limits datagrams use.
    static func cbor(_ input: [UInt8]) throws(FuzzViolation) {
        let t = FuzzTarget.cbor
        let tight = CBORLimits(maxDepth: 2, maxItems: 16)
        let strict = try? CBORDecoder.decode(input, limits: tight)
        guard let item = try? CBORDecoder.decode(input) else {
            try require(strict == nil, t, "accepted under tight limits but refused under the defaults")
            return
        }
        try require(item.encoded() == input, t, "accepted CBOR re-encodes differently: \(hex(item.encoded()))")
        let (depth, count) = measure(item)
        try require(depth <= CBORLimits().maxDepth + 1, t, "nesting \(depth) beyond the limit")
        try require(count <= CBORLimits().maxItems, t, "\(count) items beyond the limit")
        if let strict {
            try require(strict == item, t, "the limits changed the decoded value")
            try require(depth <= tight.maxDepth + 1 && count <= tight.maxItems, t, "tight limits not enforced: depth \(depth), \(count) items")
        }
    }

    /// Nesting depth (a scalar is 1) and item count of a decoded item.
    static func measure(_ item: CBOR) -> (depth: Int, count: Int) {
        switch item {
        case let .array(items):
            var depth = 0, count = 1
            for child in items {
                let (d, c) = measure(child)
                depth = max(depth, d)
                count += c
            }
            return (depth + 1, count)
        case let .map(pairs):
            var depth = 0, count = 1
            for pair in pairs {
                let (dk, ck) = measure(pair.key)
                let (dv, cv) = measure(pair.value)
                depth = max(depth, dk, dv)
                count += ck + cv
            }
            return (depth + 1, count)
        default:
            return (1, 1)
        }
    }

    /// A record: accepted bytes re-encode from the decoded fields (keys in NFC), the id is the
    /// hash of the bytes, the body keeps §3.4's rules, and verification agrees with the
    /// signature check.
    static func record(_ input: [UInt8]) throws(FuzzViolation) {
        let t = FuzzTarget.record
        let record: Record
        do {
            record = try Record.decode(input, verify: false)
        } catch {
            try require((try? Record.decode(input, verify: true)) == nil, t, "refused unverified but accepted verified")
            if input.count > RecordLimits.maxRecordBytes {
                try require(error == .tooLarge(size: input.count, limit: RecordLimits.maxRecordBytes), t, "oversized record refused as \(error)")
            }
            return
        }
        try checkAccepted(record, input, t)
        let verified = (try? Record.decode(input, verify: true)) != nil
        try require(verified == record.verifySignature(), t, "decode(verify: true) disagrees with verifySignature()")
    }

    /// A sealed write's plaintext as a member's node reads it once opened (any member can seal
    /// whatever bytes it likes): what is accepted, the general way accepts as the same pairs,
    /// each value's bytes are its canonical encoding (what the zones' store keeps), a value held
    /// in its bytes is exactly those, and the pairs keep §3.4's rules.
    static func sealedPlaintext(_ input: [UInt8]) throws(FuzzViolation) {
        let t = FuzzTarget.sealedPlaintext
        guard let opened = try? PrivateBodies.decodeWriteAndValueBytes(input) else { return }
        guard let general = try? PrivateBodies.decodeWriteItems(input) else {
            throw FuzzViolation(target: t.rawValue, message: "accepted, but the general way refuses it")
        }
        try require(writeBody(opened.pairs).encoded() == writeBody(general.pairs).encoded(), t, "read otherwise than the general way reads it")
        try require(opened.valueBytes.count == opened.pairs.count, t, "\(opened.valueBytes.count) value encodings for \(opened.pairs.count) pairs")
        for (pair, bytes) in zip(opened.pairs, opened.valueBytes) {
            try require(Array(bytes) == TreeValueCodec.encode(pair.value).encoded(), t, "the bytes kept for \(pair.path) are not its value's encoding")
            if let held = pair.heldEncoding { try require(held == bytes, t, "the value held at \(pair.path) is not the bytes kept") }
        }
        try require(opened.valueBytes.map(Array.init) == general.valueBytes.map(Array.init), t, "value encodings differ from the general way's")
        try require((1...RecordLimits.maxPairs).contains(opened.pairs.count), t, "\(opened.pairs.count) pairs accepted")
        try checkPairs(opened.pairs, t)
    }

    /// A write body of `pairs` as the tree reads them (keys in NFC).
    static func writeBody(_ pairs: [WritePair]) -> CBOR {
        .array(pairs.map { .array([.text($0.path.storageKey), TreeValueCodec.encode($0.value)]) })
    }

    /// The invariants of a record any decoder accepted from `input`.
    static func checkAccepted(_ record: Record, _ input: [UInt8], _ t: FuzzTarget) throws(FuzzViolation) {
        try require(input.count <= RecordLimits.maxRecordBytes, t, "record above the size limit accepted")
        try require(record.encoded == input, t, "encoded differs from the input")
        try require(record.id == BLAKE2b.digest256(input), t, "id is not the BLAKE2b-256 of the bytes")
        let body: CBOR
        switch record.body {
        case let .write(pairs):
            try require((1...RecordLimits.maxPairs).contains(pairs.count), t, "\(pairs.count) pairs accepted")
            try checkPairs(pairs, t)
            body = writeBody(pairs)
        case let .manifest(m):
            try require(m.size >= 1 && m.size <= Manifest.maxSize && Manifest.chunkSizes.contains(m.chunkSize)
                        && UInt64(m.chunks.count) == (m.size + m.chunkSize - 1) / m.chunkSize, t, "manifest outside its limits")
            body = .array([.bytes(m.blob.bytes), .unsigned(m.size), .text(m.contentType), .unsigned(m.chunkSize),
                           .array(m.chunks.map { .bytes($0.bytes) })])
        case let .file(f):
            // §3.6 on the bytes: no empty, "." or ".." segment between "/" bytes (whatever
            // combining marks follow a slash) and no control characters.
            let bytes = Array(f.path.utf8)
            try require(!bytes.isEmpty && !bytes.contains { $0 < 0x20 || $0 == 0x7F }, t, "bad storage path accepted")
            for segment in bytes.split(separator: 0x2F, omittingEmptySubsequences: false) {
                try require(!segment.isEmpty && Array(segment) != [0x2E] && Array(segment) != [0x2E, 0x2E], t,
                            "storage path \(f.path.debugDescription) has an empty, \".\" or \"..\" segment")
            }
            body = .array([.text(f.path), f.manifest.map { .bytes($0.bytes) } ?? .null])
        case let .largeWrite(w):
            try require(w.size >= 1 && w.size <= LargeWrite.maxSize && Manifest.chunkSizes.contains(w.chunkSize)
                        && UInt64(w.chunks.count) == (w.size + w.chunkSize - 1) / w.chunkSize, t, "large write outside its limits")
            body = .array([.bytes(w.content.bytes), .unsigned(w.size), .unsigned(w.chunkSize), .array(w.chunks.map { .bytes($0.bytes) })])
        case let .groupKey(k):
            try require(k.boxes.count >= 1 && k.boxes.count <= PrivateLimits.maxBoxes, t, "\(k.boxes.count) sealed keys accepted")
            body = .array([.text(k.conversation), .unsigned(k.epoch), .bytes(k.salt), .array(k.boxes.map { .bytes($0) }), .bytes(k.meta)])
        case let .sealedWrite(w):
            body = .array([.text(w.conversation), .bytes(w.epoch.bytes), .bytes(w.ciphertext)])
        case let .leave(l):
            body = .array([.text(l.conversation)])
        }
        let rebuilt = CBOR.array([
            .unsigned(Record.version), .unsigned(record.kind.rawValue), .bytes(record.author.bytes),
            .unsigned(record.clock), body, .bytes(record.signature.bytes),
        ]).encoded()
        // The decoded record is the bytes as the tree reads them: every key in NFC (§5.1).
        guard let written = try? CBORDecoder.decode(input, limits: CBORLimits(maxDepth: 40, maxItems: 200_000)),
              case let .array(fields) = written, fields.count == 6 else {
            throw FuzzViolation(target: t.rawValue, message: "an accepted record is not a CBOR array of 6")
        }
        if case let .array(items) = fields[4], record.kind == .write {
            let texts = items.compactMap { item -> String? in
                guard case let .array(pair) = item, case let .text(text)? = pair.first else { return nil }
                return text
            }
            for (a, b) in zip(texts, texts.dropFirst()) {
                try require(a.utf8.lexicographicallyPrecedes(b.utf8), t, "paths out of order as written: \(a) then \(b)")
            }
        }
        var respelled = fields
        respelled[4] = nfcBody(fields[4], kind: record.kind)
        try require(rebuilt == CBOR.array(respelled).encoded(), t, "accepted record re-encodes differently: \(hex(rebuilt))")
    }

    /// A write's or file entry's body with every key of its paths and objects in NFC.
    static func nfcBody(_ body: CBOR, kind: RecordKind) -> CBOR {
        func keys(_ item: CBOR) -> CBOR {
            guard case let .map(pairs) = item else { return item }
            return .map(pairs.map { pair in
                guard case let .text(key) = pair.key else { return pair }
                return CBORPair(.text(CanonicalText.nfc(key)), keys(pair.value))
            })
        }
        guard case let .array(items) = body else { return body }
        switch kind {
        case .write:
            return .array(items.map { item in
                guard case let .array(pair) = item, pair.count == 2, case let .text(path) = pair[0] else { return item }
                return .array([.text(CanonicalText.nfc(path)), keys(pair[1])])
            })
        case .file:
            guard items.count == 2, case let .text(path) = items[0] else { return body }
            return .array([.text(CanonicalText.nfc(path)), items[1]])
        case .manifest, .largeWrite, .groupKey, .sealedWrite, .leave:
            return body
        }
    }

    /// §3.4: paths distinct and none an ancestor of another once in NFC but across a zone's root (their order as written
    /// is checked on the bytes), values in tree form with NFC keys.
    static func checkPairs(_ pairs: [WritePair], _ t: FuzzTarget) throws(FuzzViolation) {
        for (index, pair) in pairs.enumerated() {
            try require(pair.path.segments.allSatisfy(CanonicalText.isNFC), t, "a key of \(pair.path) is not in NFC")
            for other in pairs[..<index] {
                try require(other.path != pair.path, t, "\(pair.path) twice in one write")
                for (upper, lower) in [(other.path, pair.path), (pair.path, other.path)] where upper.isAncestor(of: lower) {
                    try require(Zone.pairsMayNest(upper, above: lower), t, "\(upper) and \(lower) meet in one zone of one write")
                }
            }
            if pair.value != .null {
                let normal = try? pair.value.normalized(at: pair.path)
                try require(normal == pair.value, t, "value at \(pair.path) is not in tree form")
            }
        }
    }

    /// The export stream: an accepted stream is exactly header, frames and end frame (and, in
    /// version 2, chunk frames and their end frame).
    static func exportStream(_ input: [UInt8]) throws(FuzzViolation) {
        let t = FuzzTarget.export
        guard let (frames, chunks) = try? ExportStream.sections(input) else { return }
        for frame in frames + (chunks ?? []) {
            try require((1...RecordLimits.maxRecordBytes).contains(frame.count), t, "frame of \(frame.count) bytes accepted")
        }
        let records = frames.map { Array($0) }
        try require(ExportStream.encode(records, chunks: chunks?.map { Array($0) }) == input, t, "accepted stream re-encodes differently")
        for bytes in records {
            if let record = try? Record.decode(bytes, verify: false) { try checkAccepted(record, bytes, t) }
        }
    }

    static let datagramKey = NetworkKey.named("fuzz").datagramKey
    static let datagramNonce = [UInt8](0..<24)

    /// Sealed datagrams. Mode 0 opens the input as received bytes; mode 1 seals the rest of the
    /// input as the plaintext of the chosen type first, so the fuzzer reaches the CBOR behind the
    /// AEAD. An accepted datagram's plaintext is the canonical encoding of what was decoded, and
    /// it seals and opens back to itself.
    static func datagram(_ input: [UInt8]) throws(FuzzViolation) {
        let t = FuzzTarget.datagram
        var reader = FuzzInput(input)
        let mode = reader.byte()
        var bytes = reader.rest
        if mode & 1 == 1 {
            let type = reader.byte() % 4
            let plaintext = reader.rest
            bytes = [type] + XChaChaPoly.seal(plaintext, key: datagramKey, ad: Array("lanchat/datagram/v1".utf8) + [type],
                                              nonce: datagramNonce)
        }
        guard let datagram = Datagram.open(bytes, key: datagramKey) else { return }
        try require(bytes.count <= Datagram.maxBytes, t, "datagram of \(bytes.count) bytes accepted")
        let type = bytes[0]
        guard let plaintext = XChaChaPoly.open(Array(bytes.dropFirst()), key: datagramKey, ad: Array("lanchat/datagram/v1".utf8) + [type]) else {
            throw FuzzViolation(target: t.rawValue, message: "accepted a datagram that does not open")
        }
        let expected: (UInt8, CBOR)
        switch datagram {
        case let .beacon(b):
            try require(b.instance.count == 8 && b.fingerprint.count == 16 && b.port > 0, t, "beacon fields out of range")
            expected = (1, .array([.unsigned(1), .bytes(b.author.bytes), .bytes(b.instance), .unsigned(UInt64(b.port)),
                                   .unsigned(b.recordCount), .bytes(b.fingerprint)]))
        case let .push(record):
            expected = (2, .array([.unsigned(2), .bytes(record)]))
        case let .live(value):
            expected = (3, .array([.unsigned(3), .bytes(value)]))
        }
        try require(expected.0 == type, t, "type byte \(type) decoded as another type")
        try require(expected.1.encoded() == plaintext, t, "accepted plaintext re-encodes differently: \(hex(plaintext))")
        let resealed = datagram.seal(key: datagramKey)
        try require(resealed.count == bytes.count, t, "resealed datagram changed size")
        try require(Datagram.open(resealed, key: datagramKey) == datagram, t, "a resealed datagram does not open to itself")
    }

    /// The session framing. The first byte picks the piece sizes the stream is cut into and the
    /// frame limit; the frames read are exactly the length-prefixed pieces of the input.
    static func frames(_ input: [UInt8]) throws(FuzzViolation) {
        let t = FuzzTarget.frames
        var reader = FuzzInput(input)
        let control = reader.byte()
        let limit = control & 0x80 != 0 ? 4096 : SessionMessage.maxFrameBytes
        let stream = reader.rest
        var frameReader = FrameReader(maxFrameBytes: limit)
        var frames = [[UInt8]]()
        var failed = false
        for piece in pieces(stream, sizes: [1 + Int(control & 0x3F), 1, 7]) {
            do { frames += try frameReader.push(piece) } catch {
                failed = true
                break
            }
        }
        var rebuilt = [UInt8]()
        for frame in frames {
            try require(frame.count >= 1 && frame.count <= limit, t, "frame of \(frame.count) bytes passed a limit of \(limit)")
            rebuilt += [UInt8(frame.count >> 24 & 0xFF), UInt8(frame.count >> 16 & 0xFF), UInt8(frame.count >> 8 & 0xFF), UInt8(frame.count & 0xFF)]
            rebuilt += frame
        }
        try require(rebuilt.count <= stream.count && Array(stream.prefix(rebuilt.count)) == rebuilt, t,
                    "the frames are not the start of the stream")
        if !failed {
            // What is left must be one incomplete frame whose declared length is within the limit.
            let left = stream.count - rebuilt.count
            if left >= 4 {
                let length = stream[rebuilt.count..<rebuilt.count + 4].reduce(0) { $0 << 8 | Int($1) }
                try require(length >= 1 && length <= limit && left - 4 < length, t, "a complete or oversized frame was held back")
            }
        }
        for frame in frames { try sessionMessage(frame, target: t) }
    }

    /// One signed live value (§7), plain or sealed: accepted bytes are canonical (they re-encode to themselves),
    /// within the size limits, and signed by their author over exactly these fields.
    static func liveValue(_ input: [UInt8]) throws(FuzzViolation) {
        let t = FuzzTarget.liveValue
        // The sealed form of a private conversation's value (§11.8): canonical too, of a
        // bucket's size, for a private conversation id.
        if case let .sealed(sealed)? = try? LiveMessage.decode(input) {
            try require(sealed.encoded() == input, t, "accepted sealed live value re-encodes differently: \(hex(sealed.encoded()))")
            try require(input.count <= LiveValue.maxEncodedBytes, t, "a sealed live value of \(input.count) bytes accepted")
            try require(SealedLive.ciphertextSizes.contains(sealed.ciphertext.count) && sealed.instance.count == 8, t,
                        "a sealed live value of \(sealed.ciphertext.count) bytes of ciphertext accepted")
            try require(sealed.conversation.utf8.count == 22 && (sealed.conversation.hasPrefix("g_") || sealed.conversation.hasPrefix("d_")), t,
                        "a sealed live value for \(sealed.conversation) accepted")
            return
        }
        guard let value = try? LiveValue.decode(input) else { return }
        try require(value.encoded() == input, t, "accepted live value re-encodes differently: \(hex(value.encoded()))")
        try require(input.count <= LiveValue.maxEncodedBytes, t, "a live value of \(input.count) bytes accepted")
        try require(value.valueBytes.count <= LiveValue.maxValueBytes && value.path.description.utf8.count <= LiveValue.maxPathBytes, t,
                    "a live value beyond its path or value limit accepted")
        try require(value.instance.count == 8, t, "an instance of \(value.instance.count) bytes accepted")
    }

    /// One session message: accepted bytes re-encode to themselves, within §8.2's limits.
    static func sessionMessage(_ input: [UInt8]) throws(FuzzViolation) {
        try sessionMessage(input, target: .sessionMessage)
    }

    static func sessionMessage(_ input: [UInt8], target t: FuzzTarget) throws(FuzzViolation) {
        guard let message = try? SessionMessage.decode(input) else { return }
        try require(message.encoded() == input, t, "accepted message re-encodes differently: \(hex(message.encoded()))")
        try require(message.framed() == [UInt8(input.count >> 24 & 0xFF), UInt8(input.count >> 16 & 0xFF),
                                         UInt8(input.count >> 8 & 0xFF), UInt8(input.count & 0xFF)] + input, t, "framed() is not length + message")
        switch message {
        case let .hello(_, instance, _, fingerprint):
            try require(instance.count == 8 && fingerprint.count == 16, t, "hello field sizes")
        case let .want(ids):
            try require(ids.count <= SessionMessage.maxWantIDs, t, "want with \(ids.count) ids accepted")
        case let .wantChunks(hashes), let .noChunks(hashes):
            try require(hashes.count <= SessionMessage.maxChunkHashes, t, "\(hashes.count) chunk hashes accepted")
        case let .chunk(_, bytes):
            try require(!bytes.isEmpty && bytes.count <= SessionMessage.maxChunkBytes, t, "a chunk of \(bytes.count) bytes accepted")
        case let .live(values):
            try require(values.count <= SessionMessage.maxLiveValues, t, "\(values.count) live values accepted")
        case .reconcile, .reconcileReply, .records:
            break
        }
    }
}
