// Percent-decoding for request targets. Firebase clients send keys as percent-encoded UTF-8,
// and the query values are JSON in which '+' is a literal plus: this is RFC 3986 decoding, not
// HTML form decoding, so '+' never becomes a space.

enum PercentDecoding {
    /// The text `bytes` spell once every `%XX` is replaced by its byte. Nil when a `%` is not
    /// followed by two hex digits or the result is not valid UTF-8, because a key that cannot be
    /// read back exactly must not silently turn into a different key.
    static func decode(_ bytes: some Collection<UInt8>) -> String? {
        guard bytes.contains(ASCII.percent) else {
            return String(validating: bytes, as: UTF8.self)
        }
        var decoded: [UInt8] = []
        decoded.reserveCapacity(bytes.count)
        var iterator = bytes.makeIterator()
        while let byte = iterator.next() {
            guard byte == ASCII.percent else {
                decoded.append(byte)
                continue
            }
            guard let high = iterator.next().flatMap(ASCII.hexValue),
                  let low = iterator.next().flatMap(ASCII.hexValue) else { return nil }
            decoded.append(high << 4 | low)
        }
        return String(validating: decoded, as: UTF8.self)
    }
}
