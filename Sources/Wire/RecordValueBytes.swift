/// Where each pair's value lies inside a write record's canonical bytes.
///
/// Why: the store keeps a protected zone's pairs as canonical CBOR, and a decoded record's
/// values re-encode to exactly the bytes they were decoded from (the decoder and
/// `TreeValueCodec` accept only canonical forms), unless the record spells a key otherwise
/// than in NFC. Slicing those bytes out costs a short scan instead of building and encoding a
/// CBOR tree per pair on every ingest.
extension Record {
    /// The encoding of each pair's value, in pair order; empty unless this is a write. Where the
    /// record spells an object key otherwise than in NFC, the values are encoded afresh from the
    /// NFC values the tree holds (`valuesRespelled`), so what is returned is always
    /// `TreeValueCodec.encode(pair.value)`.
    public var pairValueEncodings: [ArraySlice<UInt8>] {
        guard case let .write(pairs) = body else { return [] }
        if valuesRespelled { return pairs.map { TreeValueCodec.encode($0.value).encoded()[...] } }
        var scanner = CanonicalScanner(bytes: encoded[...], offset: 1)  // past the 6-item array head
        for _ in 0..<4 { scanner.skipItem() }  // version, kind, author, clock
        return scanner.pairValues(count: pairs.count)
    }
}

/// Walks bytes already checked by `CBORDecoder` item by item, without building anything. It
/// trusts its input: only use it on bytes that decoded successfully.
struct CanonicalScanner {
    /// The bytes, or a part of them: offsets are the slice's own indices.
    let bytes: ArraySlice<UInt8>
    var offset: Int

    /// Reads a head: its major type and argument (a float's bits for major type 7).
    @inline(__always)
    mutating func head() -> (major: UInt8, argument: UInt64) {
        let initial = bytes[offset]
        offset += 1
        let info = initial & 0x1F
        let width: Int
        switch info {
        case 0..<24: return (initial >> 5, UInt64(info))
        case 24: width = 1
        case 25: width = 2
        case 26: width = 4
        default: width = 8
        }
        var value: UInt64 = 0
        for i in 0..<width { value = value << 8 | UInt64(bytes[offset + i]) }
        offset += width
        return (initial >> 5, value)
    }

    /// The bytes of each pair's value in a write body (`[+ [path, value]]`) that starts at
    /// `offset`, which holds `count` pairs.
    mutating func pairValues(count: Int) -> [ArraySlice<UInt8>] {
        _ = head()  // the body's array head
        var out = [ArraySlice<UInt8>]()
        out.reserveCapacity(count)
        for _ in 0..<count {
            _ = head()  // the pair's 2-item array head
            skipItem()  // its path
            let start = offset
            skipItem()
            out.append(bytes[start..<offset])
        }
        return out
    }

    /// Moves past one whole item, nested items included.
    mutating func skipItem() {
        var pending = 1
        while pending > 0 {
            pending -= 1
            let (major, argument) = head()
            switch major {
            case 2, 3: offset += Int(argument)
            case 4: pending += Int(argument)
            case 5: pending += 2 * Int(argument)
            default: break
            }
        }
    }
}
