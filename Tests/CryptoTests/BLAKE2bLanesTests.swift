@testable import Crypto
import Testing

/// Messages hashed at once (eight with AVX-512, four with AVX2) must give exactly libsodium's
/// BLAKE2b-256 of each. Each width this machine supports is tested.
@Suite("BLAKE2b in lanes")
struct BLAKE2bLanesTests {
    /// Lengths around every block boundary the code treats apart: none, one partial block, whole
    /// blocks, one byte either side of them, and a chunk's 64 KiB.
    static let lengths = [0, 1, 63, 64, 127, 128, 129, 255, 256, 257, 1000, 4095, 4096, 65535, 65536, 65537]

    static let widths = [8, 4].filter { BLAKE2b.supports(lanes: $0) }

    static func messages(_ count: Int, length: Int) -> [ArraySlice<UInt8>] {
        (0..<count).map { _ in secureRandomBytes(length)[...] }
    }

    @Test("different messages of each length fill every lane: each digest is libsodium's", arguments: widths)
    func fullGroups(lanes: Int) {
        for length in Self.lengths {
            let group = Self.messages(lanes, length: length)
            #expect(BLAKE2b.laneDigests(group, length: length, lanes: lanes) == group.map { BLAKE2b.digest256($0) }, "length \(length)")
        }
    }

    @Test("fewer messages than lanes: the spare lanes change nothing", arguments: widths)
    func partialGroups(lanes: Int) {
        for count in 1..<lanes {
            let group = Self.messages(count, length: 300)
            #expect(BLAKE2b.laneDigests(group, length: 300, lanes: lanes) == group.map { BLAKE2b.digest256($0) }, "\(count) messages")
        }
    }

    @Test("RFC 7693's message \"abc\" in every lane", arguments: widths)
    func knownAnswer(lanes: Int) {
        let digests = BLAKE2b.laneDigests(Array(repeating: Array("abc".utf8)[...], count: lanes), length: 3, lanes: lanes)
        #expect(digests.count == lanes)
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

    @Test("one changed byte changes that message's digest only", arguments: widths)
    func oneByteChanged(lanes: Int) {
        var group = Self.messages(lanes, length: 65536)
        let before = BLAKE2b.laneDigests(group, length: 65536, lanes: lanes)
        group[2][40_000] ^= 1
        let after = BLAKE2b.laneDigests(group, length: 65536, lanes: lanes)
        #expect((0..<lanes).filter { before[$0] != after[$0] } == [2])
    }

    @Test("the widest width this machine supports is the one used")
    func widthChosen() {
        #expect(BLAKE2b.laneCount == (Self.widths.first ?? 1))
    }
}
