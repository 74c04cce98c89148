@testable import Crypto
import Testing

/// Eight messages hashed at once must give exactly libsodium's BLAKE2b-256 of each.
@Suite("BLAKE2b in lanes")
struct BLAKE2bLanesTests {
    /// Lengths around every block boundary the code treats apart: none, one partial block, whole
    /// blocks, one byte either side of them, and a chunk's 64 KiB.
    static let lengths = [0, 1, 63, 64, 127, 128, 129, 255, 256, 257, 1000, 4095, 4096, 65535, 65536, 65537]

    static func messages(_ count: Int, length: Int) -> [ArraySlice<UInt8>] {
        (0..<count).map { _ in secureRandomBytes(length)[...] }
    }

    @Test("eight different messages of each length: each lane's digest is libsodium's", .enabled(if: BLAKE2b.hasLanes))
    func fullGroups() {
        for length in Self.lengths {
            let group = Self.messages(8, length: length)
            #expect(BLAKE2b.laneDigests(group, length: length) == group.map { BLAKE2b.digest256($0) }, "length \(length)")
        }
    }

    @Test("fewer than eight messages: the spare lanes change nothing", .enabled(if: BLAKE2b.hasLanes))
    func partialGroups() {
        for count in 1...7 {
            let group = Self.messages(count, length: 300)
            #expect(BLAKE2b.laneDigests(group, length: 300) == group.map { BLAKE2b.digest256($0) }, "\(count) messages")
        }
    }

    @Test("RFC 7693's message \"abc\" in every lane", .enabled(if: BLAKE2b.hasLanes))
    func knownAnswer() {
        let digests = BLAKE2b.laneDigests(Array(repeating: Array("abc".utf8)[...], count: 8), length: 3)
        #expect(digests.allSatisfy { Hex.encode($0.bytes) == "bddd813c634239723171ef3fee98579b94964e3bb1cb3e427262c8c068d52319" })
    }

    @Test("a mixed list keeps its order: a file's chunks, a short last one, repeats and empty messages")
    func mixedList() {
        var list = Self.messages(19, length: 65536).map(Array.init) + [secureRandomBytes(4000), [], [7]]
        list += [list[3], list[19], [], secureRandomBytes(65536)]
        list.shuffle()
        #expect(BLAKE2b.digests256(list) == list.map { BLAKE2b.digest256($0) })
        #expect(BLAKE2b.digests256([[UInt8]]()) == [])
        // Pieces of one array, as a file is cut into chunks: slices that do not start at 0.
        let file = secureRandomBytes(10 * 65536 + 5)
        let pieces = stride(from: 0, to: file.count, by: 65536).map { file[$0..<min($0 + 65536, file.count)] }
        #expect(BLAKE2b.digests256(pieces) == pieces.map { BLAKE2b.digest256($0) })
    }

    @Test("one changed byte changes that message's digest only", .enabled(if: BLAKE2b.hasLanes))
    func oneByteChanged() {
        var group = Self.messages(8, length: 65536)
        let before = BLAKE2b.laneDigests(group, length: 65536)
        group[5][40_000] ^= 1
        let after = BLAKE2b.laneDigests(group, length: 65536)
        #expect((0..<8).filter { before[$0] != after[$0] } == [5])
    }
}
