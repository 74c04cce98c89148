internal import CBLAKE2bLanes

/// BLAKE2b-256 of many messages, several of the same length at a time (`CBLAKE2bLanes`): eight
/// with AVX-512, four with AVX2.
///
/// Why: a fetching node checks every chunk against its hash, and this was the largest share of
/// a fetch's CPU after encryption. A file's chunks all have the same length, so they fill the
/// lanes: about four times libsodium's rate per core with eight, twice with four. Processors
/// with neither hash one message at a time through libsodium, with the same results.
extension BLAKE2b {
    /// Messages this machine hashes at once: 8, 4, or 1 (no lanes).
    public static let laneCount = [8, 4].first { lanchat_blake2b_supports(Int32($0)) != 0 } ?? 1

    /// Whether this machine hashes several messages at once.
    public static var hasLanes: Bool { laneCount > 1 }

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
                // Two messages or more go through the lanes (spare lanes repeat the first): a
                // pass over all lanes costs about as much as two messages one at a time.
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

    /// Whether this machine can hash `lanes` messages at once (8 or 4).
    static func supports(lanes: Int) -> Bool { lanchat_blake2b_supports(Int32(lanes)) != 0 }

    /// The digests of 1 to `lanes` messages of `length` bytes each, hashed at once. Only where
    /// `supports(lanes:)`.
    static func laneDigests(_ group: [ArraySlice<UInt8>], length: Int, lanes: Int = laneCount) -> [Digest32] {
        precondition(supports(lanes: lanes) && (1...lanes).contains(group.count) && group.allSatisfy { $0.count == length })
        var pointers = [UnsafePointer<UInt8>?](repeating: nil, count: lanes)
        // Each message's storage is lent for the call, one nested borrow per message.
        func hash(from index: Int) -> [UInt8] {
            guard index == group.count else {
                return group[index].withUnsafeBufferPointer { buffer in
                    pointers[index] = buffer.baseAddress  // nil for an empty array: then nothing is read
                    return hash(from: index + 1)
                }
            }
            for lane in group.count..<lanes { pointers[lane] = pointers[0] }
            var out = [UInt8](repeating: 0, count: lanes * Digest32.byteCount)
            pointers.withUnsafeBufferPointer { messages in
                out.withUnsafeMutableBufferPointer { out in
                    if lanes == 8 {
                        lanchat_blake2b256_x8(messages.baseAddress, length, out.baseAddress)
                    } else {
                        lanchat_blake2b256_x4(messages.baseAddress, length, out.baseAddress)
                    }
                }
            }
            return out
        }
        let out = hash(from: 0)
        return (0..<group.count).map { lane in
            try! Digest32(bytes: out[lane * Digest32.byteCount..<(lane + 1) * Digest32.byteCount])  // 32 bytes by construction
        }
    }
}
