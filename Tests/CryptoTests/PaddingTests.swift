import Crypto
import Testing

@Suite("ISO/IEC 7816-4 padding")
struct PaddingTests {
    @Test("unpadding an authenticated plaintext gives what libsodium's unpad gives, valid or not")
    func authenticatedUnpadAgrees() {
        for blockSize in [1, 16, 256] {
            for length in 0...(2 * blockSize + 1) {
                let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 1) }
                let padded = Padding.pad(bytes, blockSize: blockSize)
                #expect(Padding.unpadAuthenticated(padded, blockSize: blockSize) == bytes)
                #expect(Padding.unpad(padded, blockSize: blockSize) == bytes)
            }
        }
        // Bytes no pad call gives: each must be judged alike, nil or the same prefix.
        var cases: [([UInt8], Int)] = [
            ([], 16), ([0x80], 2), ([0x80, 0], 2), ([0, 0x80], 2), ([1, 0x80], 2), ([0x80, 1], 2), ([0, 0], 2),
            ([0x80] + [UInt8](repeating: 0, count: 16), 17), ([0x80] + [UInt8](repeating: 0, count: 16), 16),
            ([0x80] + [UInt8](repeating: 0, count: 31), 16), ([7, 0x80] + [UInt8](repeating: 0, count: 14), 16),
            ([UInt8](repeating: 0, count: 256), 256), ([UInt8](repeating: 0x80, count: 256), 256),
        ]
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        func next() -> UInt64 { state = state &* 6364136223846793005 &+ 1442695040888963407; return state >> 33 }
        for _ in 0..<2000 {
            let blockSize = [1, 4, 16, 256][Int(next() % 4)]
            let blocks = Int(next() % 3) + 1
            var bytes = (0..<(blocks * blockSize)).map { _ in [0, 0, 0x80, UInt8(truncatingIfNeeded: next())][Int(next() % 4)] }
            if next() % 2 == 0, let last = bytes.indices.last { bytes[last] = 0 }
            cases.append((bytes, blockSize))
        }
        for (bytes, blockSize) in cases {
            #expect(Padding.unpadAuthenticated(bytes, blockSize: blockSize) == Padding.unpad(bytes, blockSize: blockSize),
                    "\(bytes) in blocks of \(blockSize)")
        }
    }
}
