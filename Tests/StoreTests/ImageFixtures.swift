/// Tiny but real image encoders, so the file tests store images that viewers open, not just
/// bytes that pass the type sniffer. Each writes the simplest valid form of its format.
enum ImageFixtures {
    // MARK: PNG (8-bit RGB, zlib with stored blocks, CRC-32 on every chunk)

    /// A `width` x `height` RGB PNG whose pixels come from `pixel(x, y)`.
    static func png(width: Int, height: Int, pixel: (Int, Int) -> (UInt8, UInt8, UInt8)) -> [UInt8] {
        var raw = [UInt8]()
        raw.reserveCapacity(height * (1 + width * 3))
        for y in 0..<height {
            raw.append(0)  // filter type None
            for x in 0..<width {
                let (r, g, b) = pixel(x, y)
                raw += [r, g, b]
            }
        }
        var out: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        var header = [UInt8]()
        header += bigEndian32(UInt32(width)) + bigEndian32(UInt32(height))
        header += [8, 2, 0, 0, 0]  // depth 8, colour type RGB, deflate, adaptive filters, no interlace
        out += pngChunk("IHDR", header)
        out += pngChunk("IDAT", zlibStored(raw))
        out += pngChunk("IEND", [])
        return out
    }

    static func pngChunk(_ type: String, _ data: [UInt8]) -> [UInt8] {
        let typeBytes = Array(type.utf8)
        return bigEndian32(UInt32(data.count)) + typeBytes + data + bigEndian32(crc32(typeBytes + data))
    }

    /// A zlib stream of uncompressed deflate blocks (at most 65535 bytes each) and its Adler-32.
    static func zlibStored(_ data: [UInt8]) -> [UInt8] {
        var out: [UInt8] = [0x78, 0x01]
        var offset = 0
        repeat {
            let n = min(65535, data.count - offset)
            let final: UInt8 = offset + n == data.count ? 1 : 0
            out += [final, UInt8(n & 0xFF), UInt8(n >> 8), UInt8(~n & 0xFF), UInt8((~n >> 8) & 0xFF)]
            out += data[offset..<offset + n]
            offset += n
        } while offset < data.count
        return out + bigEndian32(adler32(data))
    }

    static let crcTable: [UInt32] = (0..<256).map { n in
        var c = UInt32(n)
        for _ in 0..<8 { c = c & 1 == 1 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
        return c
    }

    static func crc32(_ bytes: [UInt8]) -> UInt32 {
        var c: UInt32 = 0xFFFF_FFFF
        for b in bytes { c = crcTable[Int((c ^ UInt32(b)) & 0xFF)] ^ (c >> 8) }
        return c ^ 0xFFFF_FFFF
    }

    static func adler32(_ bytes: [UInt8]) -> UInt32 {
        var a: UInt32 = 1, b: UInt32 = 0
        for byte in bytes {
            a = (a + UInt32(byte)) % 65521
            b = (b + a) % 65521
        }
        return b << 16 | a
    }

    // MARK: GIF (animated GIF89a, LZW with a clear code before every pixel)

    /// An animated GIF of `frames` frames, each `width` x `height` pixels of a 4-colour palette,
    /// looping forever. Frame `f`'s pixel is `index(f, x, y)` (0...3).
    static func animatedGIF(width: Int, height: Int, frames: Int, index: (Int, Int, Int) -> UInt8) -> [UInt8] {
        var out = Array("GIF89a".utf8)
        out += littleEndian16(width) + littleEndian16(height)
        out += [0xF1, 0, 0]  // global colour table of 4 entries, background 0, no aspect ratio
        out += [0, 0, 0, 255, 0, 0, 0, 255, 0, 0, 0, 255]
        // NETSCAPE2.0 loop extension: loop forever.
        out += [0x21, 0xFF, 11] + Array("NETSCAPE2.0".utf8) + [3, 1, 0, 0, 0]
        for f in 0..<frames {
            out += [0x21, 0xF9, 4, 0x04, 10, 0, 0, 0]  // graphic control: keep frame, 0.1 s delay
            out += [0x2C] + littleEndian16(0) + littleEndian16(0) + littleEndian16(width) + littleEndian16(height) + [0]
            out.append(2)  // LZW minimum code size: 2 bits (4 colours)
            // Codes of 3 bits: clear (4) before each pixel keeps the code size at 3, then end (5).
            var codes = [UInt32]()
            for y in 0..<height {
                for x in 0..<width { codes += [4, UInt32(index(f, x, y) & 3)] }
            }
            codes.append(5)
            var packed = [UInt8](), accumulator: UInt32 = 0, bits = 0
            for code in codes {
                accumulator |= code << bits
                bits += 3
                while bits >= 8 {
                    packed.append(UInt8(accumulator & 0xFF))
                    accumulator >>= 8
                    bits -= 8
                }
            }
            if bits > 0 { packed.append(UInt8(accumulator & 0xFF)) }
            for start in stride(from: 0, to: packed.count, by: 255) {
                let block = packed[start..<min(start + 255, packed.count)]
                out.append(UInt8(block.count))
                out += block
            }
            out.append(0)
        }
        out.append(0x3B)
        return out
    }

    // MARK: JPEG (baseline, one 8x8 grey block)

    /// A baseline JPEG of one 8x8 mid-grey block: a quantisation table, one DC and one AC Huffman
    /// table of a single 1-bit code each, and a scan whose only block is "DC difference 0, EOB".
    /// `comment` goes into a COM segment, to make distinct files or larger ones.
    static func jpeg(comment: [UInt8] = []) -> [UInt8] {
        var out: [UInt8] = [0xFF, 0xD8]
        out += [0xFF, 0xE0, 0, 16] + Array("JFIF".utf8) + [0, 1, 1, 0, 0, 1, 0, 1, 0, 0]
        var remaining = comment[...]
        while !remaining.isEmpty {
            let part = remaining.prefix(65533)
            remaining = remaining.dropFirst(part.count)
            out += [0xFF, 0xFE] + bigEndian16(part.count + 2) + part
        }
        out += [0xFF, 0xDB, 0, 67, 0] + [UInt8](repeating: 1, count: 64)  // DQT: table 0, all ones
        out += [0xFF, 0xC0, 0, 11, 8] + bigEndian16(8) + bigEndian16(8) + [1, 1, 0x11, 0]  // SOF0: 8x8, 1 component
        // DHT: DC table 0 and AC table 0, each one code of length 1 (symbol 0: category 0 / EOB).
        out += [0xFF, 0xC4, 0, 20, 0x00, 1] + [UInt8](repeating: 0, count: 15) + [0]
        out += [0xFF, 0xC4, 0, 20, 0x10, 1] + [UInt8](repeating: 0, count: 15) + [0]
        out += [0xFF, 0xDA, 0, 8, 1, 1, 0x00, 0, 63, 0]  // SOS: component 1, tables 0/0, full spectrum
        out += [0x3F]  // bits "0" (DC diff 0) "0" (EOB), padded with ones
        out += [0xFF, 0xD9]
        return out
    }

    // MARK: Helpers

    static func bigEndian32(_ v: UInt32) -> [UInt8] { [UInt8(v >> 24), UInt8((v >> 16) & 0xFF), UInt8((v >> 8) & 0xFF), UInt8(v & 0xFF)] }
    static func bigEndian16(_ v: Int) -> [UInt8] { [UInt8((v >> 8) & 0xFF), UInt8(v & 0xFF)] }
    static func littleEndian16(_ v: Int) -> [UInt8] { [UInt8(v & 0xFF), UInt8((v >> 8) & 0xFF)] }

    /// Deterministic pseudo-random bytes (xorshift), so large images do not compress.
    static func noise(_ count: Int, seed: UInt64) -> [UInt8] {
        var state = seed | 1
        return (0..<count).map { _ in
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            return UInt8(truncatingIfNeeded: state >> 24)
        }
    }
}
