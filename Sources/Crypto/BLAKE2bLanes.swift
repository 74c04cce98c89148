internal import CBLAKE2bLanes

/// BLAKE2b-256 of many messages, eight of the same length at a time (`CBLAKE2bLanes`).
///
/// Why: a fetching node checks every chunk against its hash, and this was the largest share of
/// a fetch's CPU after encryption. A file's chunks all have the same length, so they fill the
/// eight lanes, at about four times libsodium's rate per core. Processors without AVX-512 hash
/// one message at a time through libsodium, with the same results.
extension BLAKE2b {
    /// Whether this machine hashes eight messages at once.
    public static let hasLanes = lanchat_blake2b_lanes_available() != 0

    /// Messages hashed at once.
    public static let laneCount = Int(LANCHAT_BLAKE2B_LANES)

    /// BLAKE2b-256 of each message, in order.
    public static func digests256(_ messages: [[UInt8]]) -> [Digest32] {
        digests256(messages.map { $0[...] })
    }

    /// BLAKE2b-256 of each message, in order (the pieces of one array, say, without copies).
    public static func digests256(_ messages: [ArraySlice<UInt8>]) -> [Digest32] {
        var digests = [Digest32?](repeating: nil, count: messages.count)
        if hasLanes {
            var byLength: [Int: [Int]] = [:]
            for (index, message) in messages.enumerated() { byLength[message.count, default: []].append(index) }
            for (length, indices) in byLength {
                // Two messages or more go through the lanes (spare lanes repeat the first): eight
                // lanes cost about as much as two messages hashed one at a time.
                for start in stride(from: 0, to: indices.count, by: laneCount) where indices.count - start > 1 {
                    let group = Array(indices[start..<min(start + laneCount, indices.count)])
                    for (index, digest) in zip(group, laneDigests(group.map { messages[$0] }, length: length)) {
                        digests[index] = digest
                    }
                }
            }
        }
        return messages.indices.map { digests[$0] ?? digest256(messages[$0]) }
    }

    /// The digests of 1 to 8 messages of `length` bytes each, through the lanes. Only when `hasLanes`.
    static func laneDigests(_ group: [ArraySlice<UInt8>], length: Int) -> [Digest32] {
        precondition(hasLanes && (1...laneCount).contains(group.count) && group.allSatisfy { $0.count == length })
        var pointers = [UnsafePointer<UInt8>?](repeating: nil, count: laneCount)
        // Each message's storage is lent for the call, one nested borrow per message.
        func hash(from index: Int) -> [UInt8] {
            guard index == group.count else {
                return group[index].withUnsafeBufferPointer { buffer in
                    pointers[index] = buffer.baseAddress  // nil for an empty array: then nothing is read
                    return hash(from: index + 1)
                }
            }
            for lane in group.count..<laneCount { pointers[lane] = pointers[0] }
            var out = [UInt8](repeating: 0, count: laneCount * Digest32.byteCount)
            pointers.withUnsafeBufferPointer { lanes in
                out.withUnsafeMutableBufferPointer { lanchat_blake2b256_lanes(lanes.baseAddress, length, $0.baseAddress) }
            }
            return out
        }
        let out = hash(from: 0)
        return (0..<group.count).map { lane in
            try! Digest32(bytes: out[lane * Digest32.byteCount..<(lane + 1) * Digest32.byteCount])  // 32 bytes by construction
        }
    }
}
