// ETags for conditional reads and writes (`X-Firebase-ETag`, `if-match`, `if-none-match`).

/// The ETag of a location holding `value`: opaque to clients, which only compare it exactly.
///
/// It is the 64-bit FNV-1a hash of the value's canonical JSON (`serialized()`, keys in key
/// order), as 16 lowercase hex digits: deterministic across runs and nodes, so the same content
/// always has the same tag. Tree has no cryptographic hash, and none is needed: the tag detects
/// concurrent change for the owner's own clients, it is not a defence against a forger.
/// Nothing there (null, or an empty object, which the tree treats as null) is `null_etag`, the
/// tag clients in the wild already use for an absent value.
public func firebaseETag(of value: JSONValue) -> String {
    switch value {
    case .null: return "null_etag"
    case .object(let members) where members.isEmpty: return "null_etag"
    default: break
    }
    var hash: UInt64 = 0xcbf2_9ce4_8422_2325
    for byte in value.serialized().utf8 {
        hash ^= UInt64(byte)
        hash = hash &* 0x0000_0100_0000_01b3
    }
    let hex = String(hash, radix: 16)
    return String(repeating: "0", count: 16 - hex.count) + hex
}
