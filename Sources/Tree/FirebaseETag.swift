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
    firebaseETag(ofJSON: value.serialized())
}

/// `firebaseETag(of:)` of the value whose canonical JSON (`serialized()`) is `json`: for a reply
/// that sends that same text as its body, so the value is serialized once, not twice.
public func firebaseETag(ofJSON json: String) -> String {
    if json == "{}" { return "null_etag" }  // an empty object is nothing there, as null is
    var hasher = FirebaseETagHasher()
    hasher.update(json.utf8)
    return hasher.etag
}

/// `firebaseETag(of:)` over a value's canonical JSON given a piece at a time, for values written
/// out while they are read (the text `null`, nothing there, gives `null_etag`).
public struct FirebaseETagHasher: Sendable {
    private var hash: UInt64 = 0xcbf2_9ce4_8422_2325
    private var isNull = true
    private var count = 0

    public init() {}

    public mutating func update(_ bytes: some Sequence<UInt8>) {
        // In locals, so the loop over a large value's bytes stays in registers.
        var hash = self.hash, count = self.count, isNull = self.isNull
        for byte in bytes {
            // Only "null" itself is nothing there; its prefixes and extensions are not.
            if count < 4 { isNull = (count == 0 || isNull) && byte == FirebaseETagHasher.null[count] }
            count += 1
            hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
        }
        (self.hash, self.count, self.isNull) = (hash, count, isNull)
    }

    private static let null = Array("null".utf8)

    public var etag: String {
        if count == 0 || (count == 4 && isNull) { return "null_etag" }
        let hex = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }
}
