import Crypto
import Private
import Testing
import TestSupport

/// Sealed files (Protocol.md §11.7): what a member opens, and the changes a relay or a member
/// could make to the chunks, each of which must fail to open instead of yielding other bytes.
@Suite("Sealed files")
struct SealedFileTests {
    static func bytes(_ count: Int, seed: UInt64) -> [UInt8] {
        var rng = SplitMix64(seed: seed)
        return (0..<count).map { _ in UInt8.random(in: 0...255, using: &rng) }
    }

    @Test("sizes around the segment boundary round-trip, and each sealed segment is one 64 KiB chunk", arguments: [1, 100, 65_519, 65_520, 65_521, 200_000, 3 * 65_520])
    func roundTrip(size: Int) throws {
        let plain = Self.bytes(size, seed: UInt64(size))
        let key = SealedFile.makeKey()
        let sealed = SealedFile.seal(plain, key: key)
        #expect(sealed.count == SealedFile.sealedSize(size))
        #expect(sealed.count == size + 16 * ((size + 65_519) / 65_520))
        #expect(try SealedFile.open(sealed, key: key) == plain)
        if size >= 32 { #expect(!sealed.windowsContain(Array(plain.prefix(32))), "the plaintext shows through") }
    }

    @Test("a wrong key, a flipped bit, swapped, dropped or repeated segments, and a cut file all fail to open")
    func tampering() throws {
        let plain = Self.bytes(3 * 65_520 + 10, seed: 7)
        let key = SealedFile.makeKey()
        let sealed = SealedFile.seal(plain, key: key)
        let chunk = 65_536
        let segments = stride(from: 0, to: sealed.count, by: chunk).map { Array(sealed[$0..<min($0 + chunk, sealed.count)]) }
        #expect(segments.count == 4)
        #expect(throws: PrivateError.undecryptable) { try SealedFile.open(sealed, key: SealedFile.makeKey()) }
        var flipped = sealed
        flipped[70_000] ^= 1
        #expect(throws: PrivateError.undecryptable) { try SealedFile.open(flipped, key: key) }
        #expect(throws: PrivateError.undecryptable) { try SealedFile.open((segments[1] + segments[0] + segments[2] + segments[3]), key: key) }
        #expect(throws: PrivateError.undecryptable) { try SealedFile.open((segments[0] + segments[1] + segments[2]), key: key) }
        #expect(throws: PrivateError.undecryptable) { try SealedFile.open((segments[0] + segments[0] + segments[1] + segments[2] + segments[3]), key: key) }
        #expect(throws: PrivateError.undecryptable) { try SealedFile.open(Array(sealed.dropLast(1)), key: key) }
        #expect(throws: PrivateError.undecryptable) { try SealedFile.open(Array(sealed.prefix(16)), key: key) }
        #expect(throws: PrivateError.undecryptable) { try SealedFile.open([], key: key) }
        // Another file's chunks (sealed under its own key) spliced in do not open.
        let other = SealedFile.seal(Self.bytes(3 * 65_520 + 10, seed: 8), key: SealedFile.makeKey())
        #expect(throws: PrivateError.undecryptable) { try SealedFile.open(Array(segments[0] + other[chunk...]), key: key) }
    }

    @Test("photoKey: 43 characters of unpadded base64url naming 32 bytes, nothing else")
    func keyText() {
        let key = [UInt8](0..<32)
        #expect(SealedFile.encodeKey(key) == "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8")
        #expect(SealedFile.decodeKey(SealedFile.encodeKey(key)) == key)
        #expect(SealedFile.decodeKey("AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=") == nil)
        #expect(SealedFile.decodeKey("AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh") == nil)
        #expect(SealedFile.decodeKey("") == nil)
    }

    @Test("Protocol.md's sealed file vector")
    func vector() throws {
        let vectors = try ProtocolVectors.of(kind: "sealed-file")
        #expect(vectors.count == 1)
        for v in vectors {
            let key = Hex.decode(v["file-key"]!)!
            let plain = Hex.decode(v["plaintext"]!)!
            let sealed = SealedFile.seal(plain, key: key)
            if PrivateVectorTests.printing { print("sealed: \(Hex.encode(sealed))") }
            #expect(Hex.encode(sealed) == v["sealed"]!)
            #expect(try SealedFile.open(Hex.decode(v["sealed"]!)!, key: key) == plain)
            #expect(SealedFile.encodeKey(key) == v["photo-key"]!)
        }
    }
}
