import Crypto
import Tree

/// One signed live value (Protocol.md §7, §8.2): a typing flag, a status, a read receipt. It
/// travels beside the records, in a `live` datagram and in session message 9, but is never a
/// record: nodes keep it in memory (receipts also on disk) and show it over their trees.
///
///     live   = [author:bstr32, instance:bstr8, version:uint, path:tstr, value:bstr, signature:bstr64]
///     signed = "lanchat/live/v1" || 00 || CBOR([author, instance, version, path, value])
///
/// `value` is the JSON text of the value (`null` clears it). The signature is what lets a
/// receiver hold the writer to its path: a datagram's source address proves nothing, and only
/// `$uid` may write `/conversations/$cid/typingIndicator/$uid`.
public struct LiveValue: Hashable, Sendable {
    public let author: PublicKey
    /// The writer node's instance (random per start, as in its beacons): typing and status
    /// values live only as long as that instance is heard.
    public let instance: [UInt8]
    /// Orders one author's values: a receiver takes a value only when it is newer than the
    /// last it took from that author (for receipts: at that path), so a replay changes nothing.
    public let version: UInt64
    public let path: Path
    public let value: JSONValue
    /// The value's JSON text as signed.
    public let valueBytes: [UInt8]
    public let signature: Signature
    /// For a value of a private conversation, the sealed form it travels and is kept in (its
    /// signature is the sealed form's); nil for a plain value.
    public let sealed: SealedLive?

    /// Longest path text, in bytes.
    public static let maxPathBytes = 512
    /// Longest value (its JSON text), in bytes. With `maxPathBytes`, a live value fits one
    /// datagram (1,195 bytes at most).
    public static let maxValueBytes = 512
    /// Longest encoding: both limits reached and the largest version.
    public static let maxEncodedBytes = 1149
    public static let signingDomain: [UInt8] = Array("lanchat/live/v1".utf8) + [0]

    /// Signs `value` at `path` as `key`'s user.
    public static func signed(by key: PrivateKey, instance: [UInt8], version: UInt64, path: Path, value: JSONValue)
        throws -> LiveValue {
        let text = Array(value.serialized().utf8)
        let pathText = path.description
        guard Array(pathText.utf8).count <= maxPathBytes else { throw LiveValueError.tooLarge("path of \(pathText.utf8.count) bytes exceeds \(maxPathBytes)") }
        guard text.count <= maxValueBytes else { throw LiveValueError.tooLarge("value of \(text.count) bytes exceeds \(maxValueBytes)") }
        guard instance.count == Beacon.instanceByteCount else { throw LiveValueError.invalid("instance is not 8 bytes") }
        let unsigned = unsignedItem(author: key.publicKey, instance: instance, version: version, path: pathText, value: text)
        let signature = try key.sign(signingDomain + unsigned.encoded())
        return LiveValue(author: key.publicKey, instance: instance, version: version, path: path, value: value,
                         valueBytes: text, signature: signature, sealed: nil)
    }

    /// The value a sealed form holds, once a member opened it: `path` and `valueBytes` come from
    /// its plaintext, and the value is checked as `decode` checks a plain one.
    public static func opened(_ sealed: SealedLive, path: Path, valueBytes: [UInt8]) throws(LiveValueError) -> LiveValue {
        guard valueBytes.count <= maxValueBytes else { throw .tooLarge("value of \(valueBytes.count) bytes exceeds \(maxValueBytes)") }
        guard path.description.utf8.count <= maxPathBytes else { throw .tooLarge("path exceeds \(maxPathBytes) bytes") }
        let value: JSONValue
        do { value = try parseValue(valueBytes, at: path) } catch { throw .invalid("value: \(error)") }
        return LiveValue(author: sealed.author, instance: sealed.instance, version: sealed.version, path: path, value: value,
                         valueBytes: valueBytes, signature: sealed.signature, sealed: sealed)
    }

    /// The JSON value of a live value's text, within the limits of a live value.
    static func parseValue(_ bytes: [UInt8], at path: Path) throws -> JSONValue {
        try JSONValue.parse(bytes, limits: JSONLimits(maxBytes: maxValueBytes, maxDepth: 8, maxStringBytes: maxValueBytes))
            .normalized(at: path)
    }

    /// The same value in its sealed form (made by `LiveSealing` from this one's fields).
    public func withSealed(_ sealed: SealedLive) -> LiveValue {
        LiveValue(author: author, instance: instance, version: version, path: path, value: value, valueBytes: valueBytes,
                  signature: sealed.signature, sealed: sealed)
    }

    private init(author: PublicKey, instance: [UInt8], version: UInt64, path: Path, value: JSONValue, valueBytes: [UInt8],
                 signature: Signature, sealed: SealedLive?) {
        self.sealed = sealed
        self.author = author
        self.instance = instance
        self.version = version
        self.path = path
        self.value = value
        self.valueBytes = valueBytes
        self.signature = signature
    }

    private static func unsignedItem(author: PublicKey, instance: [UInt8], version: UInt64, path: String, value: [UInt8]) -> CBOR {
        .array([.bytes(author.bytes), .bytes(instance), .unsigned(version), .text(path), .bytes(value)])
    }

    /// The form it travels in: the sealed one for a private conversation's value.
    public func encoded() -> [UInt8] {
        if let sealed { return sealed.encoded() }
        return CBOR.array([.bytes(author.bytes), .bytes(instance), .unsigned(version), .text(path.description), .bytes(valueBytes),
                    .bytes(signature.bytes)]).encoded()
    }

    /// Decodes and verifies a live value: strict CBOR, the sizes above, a valid path, a JSON
    /// value within the limits, and the author's signature.
    public static func decode(_ bytes: [UInt8]) throws(LiveValueError) -> LiveValue {
        guard bytes.count <= maxEncodedBytes else { throw .tooLarge("live value of \(bytes.count) bytes exceeds \(maxEncodedBytes)") }
        let item: CBOR
        do { item = try CBORDecoder.decode(bytes, limits: CBORLimits(maxDepth: 2, maxItems: 8)) } catch {
            throw .invalid("\(error)")
        }
        guard case let .array(fields) = item, fields.count == 6,
              case let .bytes(authorBytes) = fields[0], let author = try? PublicKey(bytes: authorBytes),
              case let .bytes(instance) = fields[1], instance.count == Beacon.instanceByteCount,
              case let .unsigned(version) = fields[2],
              case let .text(pathText) = fields[3],
              case let .bytes(valueBytes) = fields[4],
              case let .bytes(signatureBytes) = fields[5], let signature = try? Signature(bytes: signatureBytes)
        else { throw .invalid("not [author, instance, version, path, value, signature]") }
        guard pathText.utf8.count <= maxPathBytes else { throw .tooLarge("path of \(pathText.utf8.count) bytes exceeds \(maxPathBytes)") }
        guard valueBytes.count <= maxValueBytes else { throw .tooLarge("value of \(valueBytes.count) bytes exceeds \(maxValueBytes)") }
        let path: Path
        do { path = try Path(pathText) } catch { throw .invalid("path: \(error)") }
        guard path.description == pathText else { throw .invalid("path \(pathText) is not in its canonical form") }
        let value: JSONValue
        do {
            value = try parseValue(valueBytes, at: path)
        } catch { throw .invalid("value: \(error)") }
        let unsigned = unsignedItem(author: author, instance: instance, version: version, path: pathText, value: valueBytes)
        guard author.verify(signature, for: signingDomain + unsigned.encoded()) else { throw .badSignature }
        return LiveValue(author: author, instance: instance, version: version, path: path, value: value,
                         valueBytes: valueBytes, signature: signature, sealed: nil)
    }

    /// The private conversation whose live value this is (its path is in one), or nil.
    public var privateConversation: String? {
        let s = path.segments
        guard s.count >= 2, s[0] == "conversations", (try? PrivateBodies.validate(conversation: s[1])) != nil else { return nil }
        return s[1]
    }
}

/// Why a live value was refused (it is dropped; the sender is not penalised).
public enum LiveValueError: Error, Equatable, Sendable, CustomStringConvertible {
    case invalid(String)
    case tooLarge(String)
    case badSignature

    public var description: String {
        switch self {
        case let .invalid(why): return "invalid live value: \(why)"
        case let .tooLarge(why): return "live value too large: \(why)"
        case .badSignature: return "live value with a bad signature"
        }
    }
}
