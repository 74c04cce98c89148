#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Length-prefixed frames on stdin/stdout: a 2-byte big-endian length, then that many bytes.
/// Two bytes suffice because Noise never produces a message over 65535 bytes. Raw `read`/`write`
/// on the file descriptors, so nothing is buffered behind the peer's back.
enum FrameIO {
    static func readFrame(during step: String) throws(InteropError) -> [UInt8] {
        let header = try readExactly(2, during: step)
        return try readExactly(Int(header[0]) << 8 | Int(header[1]), during: step)
    }

    static func writeFrame(_ bytes: [UInt8]) throws(InteropError) {
        precondition(bytes.count <= 0xFFFF, "a Noise message never exceeds 65535 bytes")
        try writeAll([UInt8(bytes.count >> 8), UInt8(bytes.count & 0xFF)] + bytes)
    }

    private static func readExactly(_ count: Int, during step: String) throws(InteropError) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        var filled = 0
        while filled < count {
            let n = out.withUnsafeMutableBytes { read(0, $0.baseAddress! + filled, count - filled) }
            if n == 0 { throw .peerClosed(during: step) }
            if n < 0 {
                if errno == EINTR { continue }
                throw .io("read: errno \(errno)")
            }
            filled += n
        }
        return out
    }

    private static func writeAll(_ bytes: [UInt8]) throws(InteropError) {
        var sent = 0
        while sent < bytes.count {
            let n = bytes.withUnsafeBytes { write(1, $0.baseAddress! + sent, bytes.count - sent) }
            if n < 0 {
                if errno == EINTR { continue }
                throw .io("write: errno \(errno)")
            }
            sent += n
        }
    }
}

/// Diagnostics go to stderr: stdout carries only frames.
func printError(_ text: String) {
    let line = Array((text + "\n").utf8)
    _ = line.withUnsafeBytes { write(2, $0.baseAddress!, $0.count) }
}
