import Tree

/// What a large write's content is made of, read as a stream (Protocol.md §3.7): each pair is
/// its path, then its value as events in the order of its bytes, then its end. Keys are in NFC,
/// as the tree takes them.
public enum ContentEvent: Equatable, Sendable {
    /// A pair begins, at this path (keys in NFC).
    case pair(Path)
    /// An object begins, with this many members.
    case objectStart(count: Int)
    /// The key of the next member of the innermost open object, in NFC.
    case key(String)
    /// A primitive: the member of the last key, or the pair's whole value (then maybe null).
    case leaf(JSONValue)
    /// The innermost open object ends.
    case objectEnd
    /// The pair ends; `respelled` tells whether a key of its value was not written in NFC (so
    /// its value's canonical encoding is not the bytes it was read from).
    case pairEnd(respelled: Bool)
}

/// Reads the pairs of a content one CBOR item at a time, checking every rule of a write's pair
/// (§2 deterministic CBOR, §3.4 values, §5.1 keys and paths) as it goes, without building the
/// value: memory is the current path's keys, the previous key of each open object (for the
/// order of deterministic encoding), the keys that the check of distinctness in NFC must
/// remember (`KeyMemory`, bounded by `LargeWrite.maxRememberedKeyBytes`) and one primitive.
///
/// Errors come in the order of a whole-pair decode: a pair that breaks the CBOR rules anywhere
/// is malformed even if a rule of values broke earlier in it. So the first broken rule of
/// values is noted, reading goes on checking the CBOR only (nothing more is told to the
/// caller), and the noted error is thrown at the end of the pair.
struct PairStreamReader {
    var window: ContentWindow
    /// The path of the previous pair, as written, for their order.
    private var previous: String?
    /// The first rule of a write that the current pair broke, thrown at its end.
    private var failure: RecordError?
    /// Items of the current pair so far, and the most it may hold (the pairs in a zone only).
    private var items = 0
    private var itemLimit = Int.max
    /// Whether a key of the current pair's value was not in NFC.
    private var respelled = false
    /// What the keys remembered for distinctness cost together (`KeyMemory`).
    private var remembered = 0
    /// The current pair's path, for errors.
    private var pairPath = Path.root

    init(window: ContentWindow) { self.window = window }

    private var checking: Bool { failure == nil }

    private mutating func fail(_ error: RecordError) {
        if failure == nil { failure = error }
    }

    /// Reads one pair, telling `emit` its events while it is valid; throws the first rule the
    /// pair breaks once it is read whole (or at once, for the rules of CBOR).
    mutating func readPair(_ emit: (ContentEvent) throws -> Void) throws {
        failure = nil
        items = 0
        itemLimit = Int.max
        respelled = false
        remembered = 0
        pairPath = .root
        let head = try self.head(depth: 0)
        guard head.major == 4, head.argument == 2 else {
            fail(.invalidBody("a pair is an array of a text path and a value"))
            try skipRest(of: head, depth: 0)
            throw failure!
        }
        try checkCount(head.argument, of: 4)
        let pathHead = try self.head(depth: 1)
        if pathHead.major == 3 {
            let text = try self.text(pathHead)
            if let previous, !previous.utf8.lexicographicallyPrecedes(text.utf8) {
                fail(.invalidBody("paths not in strictly increasing order: \(previous) then \(text)"))
            }
            previous = text
            if checking {
                do {
                    pairPath = try Path(storageKey: text)
                } catch {
                    fail(.invalidPath("\(error)"))
                }
            }
        } else {
            fail(.invalidBody("a pair is an array of a text path and a value"))
            try skipRest(of: pathHead, depth: 1)
        }
        if checking {
            // A pair inside a zone is built whole to be folded (a zone is one row): bounded as a
            // whole pair was.
            if Zone.of(pairPath) != .open { itemLimit = LargeWrite.pairLimits.maxItems }
            try emit(.pair(pairPath))
        }
        let segments = pairPath.segments
        try value(depth: 1, level: segments.count, byteLength: pairPath.byteLength, allowNull: true, emit)
        if let failure { throw failure }
        try emit(.pairEnd(respelled: respelled))
    }

    // MARK: - Values

    /// Reads one item of a value whose path has `level` keys and `byteLength` bytes.
    private mutating func value(depth: Int, level: Int, byteLength: Int, allowNull: Bool,
                                _ emit: (ContentEvent) throws -> Void) throws {
        let head = try self.head(depth: depth)
        switch head.major {
        case 0:
            if head.argument > 1 << 53 { fail(invalid(level, byteLength, "integer beyond 2^53")) }
            if checking { try emit(.leaf(.number(Double(head.argument)))) }
        case 1:
            if head.argument >= 1 << 53 { fail(invalid(level, byteLength, "integer beyond -2^53")) }
            if checking { try emit(.leaf(.number(-Double(head.argument) - 1))) }
        case 2:
            _ = try take(head.argument)
            fail(invalid(level, byteLength, "byte strings are not tree values"))
        case 3:
            let text = try self.text(head)
            if checking { try emit(.leaf(.string(text))) }
        case 4:
            fail(invalid(level, byteLength, "arrays are stored as objects"))
            try skipRest(of: head, depth: depth)
        case 5:
            try object(head, depth: depth, level: level, byteLength: byteLength, emit)
        case 6:
            throw RecordError.malformed(.unsupported(offset: head.start, reason: "tags"))
        default:
            switch head.info {
            case 20, 21:
                if checking { try emit(.leaf(.bool(head.info == 21))) }
            case 22:
                if !allowNull { fail(invalid(level, byteLength, "null member inside an object")) }
                if checking { try emit(.leaf(.null)) }
            default:
                let d = try float(head)
                if d == d.rounded(), abs(d) <= TreeValueCodec.maxExactInteger {
                    fail(invalid(level, byteLength, "integral number \(d) must be a CBOR integer"))
                }
                if checking { try emit(.leaf(.number(d))) }
            }
        }
    }

    private mutating func object(_ head: Head, depth: Int, level: Int, byteLength: Int,
                                 _ emit: (ContentEvent) throws -> Void) throws {
        try checkCount(head.argument, of: 5)
        let count = Int(head.argument)
        if count == 0 { fail(invalid(level, byteLength, "empty object")) }
        if checking { try emit(.objectStart(count: count)) }
        var memory = KeyMemory(count: count)
        defer { remembered -= memory.cost }
        var previousKey: [UInt8]?
        for _ in 0..<count {
            window.startRecording()
            let keyHead = try self.head(depth: depth + 1)
            var written: String?
            if keyHead.major == 3 { written = try text(keyHead) } else { try skipRest(of: keyHead, depth: depth + 1) }
            let keyBytes = window.stopRecording()
            try Self.checkKeyOrder(keyBytes, after: &previousKey, offset: keyHead.start)
            var childLength = byteLength
            if checking {
                if let written {
                    childLength = try key(written, level: level, byteLength: byteLength, memory: &memory, emit)
                } else {
                    fail(invalid(level, byteLength, "object key is not text"))
                }
            }
            try value(depth: depth + 1, level: level + 1, byteLength: childLength, allowNull: false, emit)
        }
        if checking { try emit(.objectEnd) }
    }

    /// Checks a member's key, written as `written` in an object at `level` and `byteLength`,
    /// tells it in NFC and returns the length of the member's path.
    private mutating func key(_ written: String, level: Int, byteLength: Int, memory: inout KeyMemory,
                              _ emit: (ContentEvent) throws -> Void) throws -> Int {
        let key: String
        do { key = try Key.canonical(written) } catch {
            fail(invalid(level, byteLength, "\(error)"))
            return byteLength
        }
        let length = level == 0 ? key.utf8.count : byteLength + 1 + key.utf8.count
        guard level + 1 <= Path.maxDepth, length <= Path.maxByteLength else {
            fail(invalid(level, byteLength, level + 1 > Path.maxDepth ? "path deeper than \(Path.maxDepth) keys"
                                                                     : "path longer than \(Path.maxByteLength) bytes"))
            return byteLength
        }
        let ascii = CanonicalText.isASCII(written)
        if !ascii, !key.utf8.elementsEqual(written.utf8) { respelled = true }
        switch memory.note(key, ascii: ascii) {
        case .distinct:
            break
        case .equivalent:
            fail(invalid(level, byteLength, "two keys are canonically equivalent: \(key)"))
        case let .remembered(cost):
            remembered += cost
            if remembered > LargeWrite.maxRememberedKeyBytes {
                fail(invalid(level, byteLength, "the keys to compare in NFC exceed \(LargeWrite.maxRememberedKeyBytes) bytes"))
            }
        case .asciiInLargeObject:
            fail(invalid(level, byteLength, "key \(key) is written otherwise than in its ASCII NFC in an object of more than \(KeyMemory.smallObject) keys"))
        }
        if checking { try emit(.key(key)) }
        return length
    }

    /// An invalid value at the current member (its path named only as far as it is known).
    private func invalid(_ level: Int, _ byteLength: Int, _ reason: String) -> RecordError {
        .invalidValue(path: pairPath.description + (level > pairPath.segments.count ? "/..." : ""), reason: reason)
    }

    // MARK: - CBOR

    struct Head {
        let major: UInt8
        let info: UInt8
        let argument: UInt64
        let start: Int
    }

    /// Reads an item's head, its argument in the shortest form, counting the item.
    private mutating func head(depth: Int) throws -> Head {
        let start = window.offset
        items += 1
        if items > itemLimit {
            throw RecordError.malformed(.limitExceeded(offset: start, reason: "more than \(itemLimit) items"))
        }
        do {
            let byte = try window.byte()
            let major = byte >> 5, info = byte & 0x1F
            if major == 7 { return Head(major: major, info: info, argument: 0, start: start) }
            if major == 4 || major == 5, depth >= LargeWrite.pairLimits.maxDepth {
                throw CBORError.limitExceeded(offset: start, reason: "nesting deeper than \(LargeWrite.pairLimits.maxDepth)")
            }
            let argument: UInt64
            switch info {
            case 0..<24: argument = UInt64(info)
            case 24, 25, 26, 27:
                let width = 1 << Int(info - 24)
                guard let raw = try window.bytes(width) else { throw CBORError.truncated(offset: window.offset) }
                argument = raw.reduce(0) { $0 << 8 | UInt64($1) }
                let smallest: UInt64 = info == 24 ? 24 : info == 25 ? 0x100 : info == 26 ? 0x1_0000 : 0x1_0000_0000
                guard argument >= smallest else { throw CBORError.nonCanonical(offset: start, reason: "argument \(argument) not in shortest form") }
            case 31: throw CBORError.unsupported(offset: start, reason: "indefinite length")
            default: throw CBORError.unsupported(offset: start, reason: "reserved additional information \(info)")
            }
            return Head(major: major, info: info, argument: argument, start: start)
        } catch let error as CBORError {
            throw RecordError.malformed(error)
        }
    }

    /// Refuses an array or map count that the rest of the content cannot hold (every item takes
    /// a byte), as a whole-pair decode finds it truncated.
    private func checkCount(_ count: UInt64, of major: UInt8) throws {
        guard let remaining = window.remaining else { return }
        let minimum = major == 4 ? count : count.multipliedReportingOverflow(by: 2).partialValue
        guard count <= UInt64(remaining), minimum <= UInt64(remaining) else {
            throw RecordError.malformed(.truncated(offset: window.offset))
        }
    }

    private mutating func take(_ count: UInt64) throws -> ArraySlice<UInt8> {
        if let remaining = window.remaining, count > UInt64(remaining) {
            throw RecordError.malformed(.truncated(offset: window.offset + remaining))
        }
        guard count <= UInt64(Int.max), let bytes = try window.bytes(Int(count)) else {
            throw RecordError.malformed(.truncated(offset: window.offset))
        }
        return bytes
    }

    private mutating func text(_ head: Head) throws -> String {
        let raw = try take(head.argument)
        guard let text = CBORDecoder.text(raw) else { throw RecordError.malformed(.invalidUTF8(offset: head.start)) }
        return text
    }

    /// A float head's value, refused unless finite and in its shortest exact width; any other
    /// simple value is refused.
    private mutating func float(_ head: Head) throws -> Double {
        let width: Int
        switch head.info {
        case 25: width = 2
        case 26: width = 4
        case 27: width = 8
        default: throw RecordError.malformed(.unsupported(offset: head.start, reason: "simple value \(head.info)"))
        }
        guard let bytes = try window.bytes(width) else { throw RecordError.malformed(.truncated(offset: window.offset)) }
        let bits = bytes.reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        let d: Double
        switch width {
        case 2: d = Double(Float16(bitPattern: UInt16(bits)))
        case 4: d = Double(Float(bitPattern: UInt32(bits)))
        default: d = Double(bitPattern: bits)
        }
        guard d.isFinite else { throw RecordError.malformed(.unsupported(offset: head.start, reason: "NaN or infinity")) }
        var shortest = [UInt8]()
        CBOR.writeFloat(d, &shortest)
        guard shortest.count == width + 1 else {
            throw RecordError.malformed(.nonCanonical(offset: head.start, reason: "float not in its shortest exact width"))
        }
        return d
    }

    /// Reads what follows `head` in an item that breaks a rule already: only the rules of CBOR
    /// are checked.
    private mutating func skipRest(of head: Head, depth: Int) throws {
        switch head.major {
        case 0, 1: return
        case 2, 3:
            let raw = try take(head.argument)
            if head.major == 3, CBORDecoder.text(raw) == nil {
                throw RecordError.malformed(.invalidUTF8(offset: head.start))
            }
        case 4:
            try checkCount(head.argument, of: 4)
            for _ in 0..<head.argument { try skipRest(of: try self.head(depth: depth + 1), depth: depth + 1) }
        case 5:
            try checkCount(head.argument, of: 5)
            var previousKey: [UInt8]?
            for _ in 0..<head.argument {
                window.startRecording()
                let keyHead = try self.head(depth: depth + 1)
                try skipRest(of: keyHead, depth: depth + 1)
                let keyBytes = window.stopRecording()
                try Self.checkKeyOrder(keyBytes, after: &previousKey, offset: keyHead.start)
                try skipRest(of: try self.head(depth: depth + 1), depth: depth + 1)
            }
        case 6:
            throw RecordError.malformed(.unsupported(offset: head.start, reason: "tags"))
        default:
            if head.info >= 20, head.info <= 22 { return }
            _ = try float(head)
        }
    }

    /// A map's keys in deterministic CBOR: each encoding bytewise after the one before, so
    /// none repeats (`previous` is the last key's encoding, nil before the first).
    static func checkKeyOrder(_ key: [UInt8], after previous: inout [UInt8]?, offset: Int) throws(RecordError) {
        if let before = previous {
            if before == key { throw .malformed(.duplicateKey(offset: offset)) }
            guard before.lexicographicallyPrecedes(key) else {
                throw .malformed(.nonCanonical(offset: offset, reason: "map keys not in bytewise order"))
            }
        }
        previous = key
    }
}

/// The keys of one object that the check of distinctness in NFC (§3.4, §5.1) must remember.
///
/// Keys arrive in the order of deterministic encoding, so two ASCII keys (each its own NFC) are
/// never equal; only a key that is not ASCII can be equivalent to another. An object of at most
/// `smallObject` keys remembers every key (an ASCII key may be the NFC of a later one: "K" and
/// U+212A KELVIN SIGN). A larger one remembers only its keys that are not ASCII, and refuses a
/// key that is not ASCII but whose NFC is (only U+212A, U+037E and U+1FEF have such forms),
/// since the ASCII key it may equal was not remembered. What all the open objects remember is
/// bounded by `LargeWrite.maxRememberedKeyBytes`, so an object of millions of keys from a
/// hostile member costs a bounded set, not one entry per key.
struct KeyMemory {
    static let smallObject = 4_096
    /// The cost of one remembered key beyond its bytes, so that many short keys count too.
    static let entryCost = 16

    private let small: Bool
    private var keys: Set<String> = []
    private(set) var cost = 0

    init(count: Int) { small = count <= KeyMemory.smallObject }

    enum Outcome { case distinct, equivalent, remembered(cost: Int), asciiInLargeObject }

    mutating func note(_ key: String, ascii: Bool) -> Outcome {
        if !small {
            if ascii { return keys.isEmpty || !keys.contains(key) ? .distinct : .equivalent }
            if CanonicalText.isASCII(key) { return .asciiInLargeObject }
        }
        guard keys.insert(key).inserted else { return .equivalent }
        let added = key.utf8.count + KeyMemory.entryCost
        cost += added
        return .remembered(cost: added)
    }
}
