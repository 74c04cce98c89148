import Crypto
import Tree

/// Reads the commonest record, a write of one pair (a message, a profile field), straight from
/// its bytes into a `Record`, without building its CBOR item tree first: that tree, built and
/// then released for each record, was a third of what decoding cost a cold sync, beside the
/// signature.
///
/// It only ever accepts. On anything it does not read itself (another kind, several pairs, a
/// float, any rule broken) it gives nil, and `RecordCodec.decode` decodes the bytes the general
/// way, which then accepts them or says why not. Every rule it checks is the general decoders'
/// own (`CBORDecoder`: shortest heads, UTF-8, map keys in bytewise order and unique, the nesting
/// and item limits; `TreeValueCodec` and `Path` for values and keys), so what it accepts, the
/// general way accepts alike, as the same record; the tests check that on generated and on
/// mutated records.
struct OnePairWriteReader {
    private let bytes: UnsafeBufferPointer<UInt8>
    private var offset = 0
    private var items = 0
    /// Whether values are built, or only checked (`checksOnly`): then every value read gives
    /// `.null` in place of itself, and a key that would need respelling gives up (nil).
    private var building = true

    private init(_ bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
    }

    /// The record `encoded` holds, if it is a write of one pair that this reader reads; nil
    /// otherwise (not a refusal). `id` is BLAKE2b-256 of `encoded` if the caller has it.
    /// `holdingMessages`: a message's value (an object at its zone's root) is checked and left
    /// in its bytes (`WritePair`), for a record about to be stored.
    static func record(_ encoded: [UInt8], id: Digest32?, holdingMessages: Bool = false) -> Record? {
        let read = encoded.withUnsafeBufferPointer { buffer -> (PublicKey, UInt64, Path, Value, Signature, Bool)? in
            var reader = OnePairWriteReader(buffer)
            return reader.fields(holdingMessages: holdingMessages)
        }
        guard let (author, clock, path, value, signature, respelled) = read else { return nil }
        assert(id == nil || id == BLAKE2b.digest256(encoded), "the id given is not the hash of the bytes")
        return Record(author: author, clock: clock, body: .write([value.pair(at: path, in: encoded)]), signature: signature,
                      encoded: encoded, id: id ?? BLAKE2b.digest256(encoded), valuesRespelled: respelled)
    }

    /// A pair's value as read: built, or only checked and left in its bytes.
    private enum Value {
        case built(JSONValue)
        case checked(Range<Int>)

        /// The pair at `path` with this value, `encoded` being the bytes it was read from.
        func pair(at path: Path, in encoded: [UInt8]) -> WritePair {
            switch self {
            case let .built(value): WritePair(path: path, value: value)
            case let .checked(range): WritePair(path: path, checkedObject: encoded[range])
            }
        }
    }

    /// `[version, 1, author, clock, [[path, value]], signature]`, spanning every byte.
    private mutating func fields(holdingMessages: Bool) -> (PublicKey, UInt64, Path, Value, Signature, Bool)? {
        guard container(major: 4, depth: 0) == 6,
              unsigned() == Record.version, unsigned() == RecordKind.write.rawValue,
              let authorBytes = byteString(), authorBytes.count == PublicKey.byteCount,
              let author = try? PublicKey(bytes: authorBytes),
              let clock = unsigned(),
              container(major: 4, depth: 1) == 1, container(major: 4, depth: 2) == 2,
              let pathText = text(), let path = try? Path(storageKey: pathText) else { return nil }
        var respelled = false
        guard let value = pairValue(at: path, depth: 3, holdingMessages: holdingMessages, respelled: &respelled),
              let signatureBytes = byteString(), signatureBytes.count == Signature.byteCount,
              let signature = try? Signature(bytes: signatureBytes),
              offset == bytes.count else { return nil }
        return (author, clock, path, value, signature, respelled)
    }

    /// A pair's value at `depth`: a message (an object at its zone's root), where
    /// `holdingMessages`, checked and left in its bytes; anything else built.
    private mutating func pairValue(at path: Path, depth: Int, holdingMessages: Bool, respelled: inout Bool) -> Value? {
        let start = offset, itemsBefore = items
        if holdingMessages, path.segments.count == 4, Zone.isRoot(path.segments),
           checksOnly({ $0.object(at: path, depth: depth, respelled: &respelled) }) {
            return .checked(start..<offset)
        }
        offset = start
        items = itemsBefore
        return value(at: path, depth: depth, allowNull: true, respelled: &respelled).map(Value.built)
    }

    /// The pair of a write body of one pair, `[[path, value]]` spanning every byte (what a
    /// sealed write's plaintext holds), with its value's canonical bytes: a message left in its
    /// bytes, any other value built. Nil when this reader does not read it, or when a key would
    /// need respelling (then the bytes are no canonical encoding): the general way then decodes
    /// it (`PrivateBodies.decodeWriteItems`), which accepts it or says why not.
    static func writeBody(_ encoded: [UInt8]) -> (pair: WritePair, valueBytes: ArraySlice<UInt8>)? {
        let read = encoded.withUnsafeBufferPointer { buffer -> (Path, Value, Range<Int>)? in
            var reader = OnePairWriteReader(buffer)
            var respelled = false
            guard reader.container(major: 4, depth: 0) == 1, reader.container(major: 4, depth: 1) == 2,
                  let pathText = reader.text(), let path = try? Path(storageKey: pathText) else { return nil }
            let start = reader.offset
            guard let value = reader.pairValue(at: path, depth: 2, holdingMessages: true, respelled: &respelled),
                  !respelled, reader.offset == buffer.count else { return nil }
            return (path, value, start..<reader.offset)
        }
        guard let (path, value, range) = read else { return nil }
        return (value.pair(at: path, in: encoded), encoded[range])
    }

    /// Runs `read` checking values without building them; whether it accepted. Where it does
    /// not, the caller reads the same bytes again building them, which accepts or refuses.
    private mutating func checksOnly(_ read: (inout OnePairWriteReader) -> JSONValue?) -> Bool {
        building = false
        defer { building = true }
        return read(&self) != nil
    }

    // MARK: Values held as bytes (`WritePair`)

    /// The value in `bytes`, which this reader checked already: as the value at `path`, or as
    /// a member whose value lies at `path` (then one level deeper than read here, so the limits
    /// this read applies are ones the bytes met already).
    static func checkedValue(_ bytes: ArraySlice<UInt8>, at path: Path) -> JSONValue {
        bytes.withUnsafeBufferPointer { buffer in
            var reader = OnePairWriteReader(buffer)
            var respelled = false
            guard let value = reader.value(at: path, depth: 3, allowNull: true, respelled: &respelled) else {
                preconditionFailure("a value checked when its record was read no longer reads")
            }
            return value
        }
    }

    /// The member `key` of the object in `bytes` (checked already as the value at `path`),
    /// building that member alone; the others are stepped over (`CanonicalScanner`).
    static func checkedMember(_ key: String, of bytes: ArraySlice<UInt8>, at path: Path) -> JSONValue? {
        var scanner = CanonicalScanner(bytes: bytes, offset: bytes.startIndex)
        let count = scanner.head().argument
        var wanted = key
        return wanted.withUTF8 { wanted -> JSONValue? in
            for _ in 0..<count {
                let length = Int(scanner.head().argument)
                let start = scanner.offset
                scanner.offset += length
                let valueStart = scanner.offset
                scanner.skipItem()
                guard length == wanted.count, (0..<length).allSatisfy({ bytes[start + $0] == wanted[$0] }) else { continue }
                let member = bytes[valueStart..<scanner.offset]
                // An object's keys are checked below its own path; anything else, at the parent's.
                guard member.first! >> 5 == 5 else { return checkedValue(member, at: path) }
                return (try? path.appending(key)).map { checkedValue(member, at: $0) }
            }
            return nil
        }
    }

    // MARK: Values (`TreeValueCodec.decode`)

    /// A tree value at `path`: an object (a map with text keys, each a valid key in NFC, none
    /// canonically equivalent to another), text, a bool, an integer within 2^53, or null where
    /// `allowNull`. Floats are left to the general decoder.
    private mutating func value(at path: Path, depth: Int, allowNull: Bool, respelled: inout Bool) -> JSONValue? {
        guard offset < bytes.count else { return nil }
        switch bytes[offset] >> 5 {
        case 0:
            return unsigned().flatMap(TreeValueCodec.number(unsigned:))
        case 1:
            return argument(major: 1).flatMap(TreeValueCodec.number(negative:))
        case 3:
            guard building else { return textBytes().flatMap { CBORDecoder.isText($0) ? .null : nil } }
            return text().map(JSONValue.string)
        case 5:
            return object(at: path, depth: depth, respelled: &respelled)
        case 7:
            let simple = bytes[offset]
            offset += 1
            items += 1
            guard items <= RecordLimits.cbor.maxItems else { return nil }
            switch simple {
            case 0xF4: return .bool(false)
            case 0xF5: return .bool(true)
            case 0xF6: return allowNull ? .null : nil
            default: return nil
            }
        default:
            return nil
        }
    }

    private mutating func object(at path: Path, depth: Int, respelled: inout Bool) -> JSONValue? {
        guard let count = container(major: 5, depth: depth), count > 0 else { return nil }
        // Room for what a message holds, not for what the head claims: a hostile head may claim
        // half a megabyte of members and then end.
        var members = [String: JSONValue](minimumCapacity: building ? min(count, 16) : 0)
        var previousKey: Range<Int>?
        let pathLength = path.byteLength
        for _ in 0..<count {
            let keyStart = offset
            guard let raw = textBytes() else { return nil }
            let keyBytes = keyStart..<offset
            if let previous = previousKey {
                // Strictly increasing encoded keys: in order and no two the same.
                guard bytes[previous].lexicographicallyPrecedes(bytes[keyBytes]) else { return nil }
            }
            previousKey = keyBytes
            // The key as a string, made only when needed (a nested object's path, or the member
            // built): nearly every key is plain, checked in place and its own NFC.
            var key: String?
            if Key.isPlainASCII(raw) {
                guard path.admitsChild(keyBytes: raw.count, byteLength: pathLength) else { return nil }
            } else {
                // A key that may need respelling is left to building.
                guard building else { return nil }
                guard let written = CBORDecoder.text(raw),
                      let canonical = try? TreeValueCodec.memberKey(written, below: path, respelled: &respelled) else { return nil }
                key = canonical
            }
            let member: JSONValue?
            if offset < bytes.count, bytes[offset] >> 5 == 5 {
                let name = key ?? String(decoding: raw, as: UTF8.self)
                key = name
                guard let child = try? path.appending(name) else { return nil }
                member = object(at: child, depth: depth + 1, respelled: &respelled)
            } else {
                member = value(at: path, depth: depth + 1, allowNull: false, respelled: &respelled)
            }
            guard let member else { return nil }
            // Only checking: keys in strictly increasing order are unique, and a plain key is its
            // own NFC, so no two spell one key.
            guard building else { continue }
            guard members.updateValue(member, forKey: key ?? String(decoding: raw, as: UTF8.self)) == nil else { return nil }
        }
        return building ? .object(members) : .null
    }

    // MARK: Items (`CBORDecoder`)

    /// The count of an array (`major` 4) or map (5) at `depth`, within the nesting limit and no
    /// larger than the bytes left could hold.
    private mutating func container(major: UInt8, depth: Int) -> Int? {
        guard depth < RecordLimits.cbor.maxDepth, let count = argument(major: major) else { return nil }
        let left = UInt64(bytes.count - offset)
        guard count <= left, major == 4 || count <= left / 2 else { return nil }
        return Int(count)
    }

    private mutating func unsigned() -> UInt64? { argument(major: 0) }

    private mutating func byteString() -> UnsafeBufferPointer<UInt8>? {
        guard let length = argument(major: 2) else { return nil }
        return take(length)
    }

    private mutating func text() -> String? {
        textBytes().flatMap(CBORDecoder.text)
    }

    /// A text item's bytes in place, not yet checked as UTF-8.
    private mutating func textBytes() -> UnsafeBufferPointer<UInt8>? {
        guard let length = argument(major: 3) else { return nil }
        return take(length)
    }

    private mutating func take(_ length: UInt64) -> UnsafeBufferPointer<UInt8>? {
        guard length <= UInt64(bytes.count - offset) else { return nil }
        let start = offset
        offset += Int(length)
        return UnsafeBufferPointer(rebasing: bytes[start..<offset])
    }

    /// The argument of the next item's head, when it is of `major` type and in its shortest
    /// form; counts the item against the item limit.
    private mutating func argument(major: UInt8) -> UInt64? {
        guard offset < bytes.count, bytes[offset] >> 5 == major else { return nil }
        let info = bytes[offset] & 0x1F
        offset += 1
        items += 1
        guard items <= RecordLimits.cbor.maxItems else { return nil }
        guard info < 24 else {
            guard info <= 27 else { return nil }
            let width = 1 << Int(info - 24)
            guard width <= bytes.count - offset else { return nil }
            var value: UInt64 = 0
            for byte in bytes[offset..<(offset + width)] { value = value << 8 | UInt64(byte) }
            offset += width
            return CBORDecoder.isShortest(value, width: width) ? value : nil
        }
        return UInt64(info)
    }
}
