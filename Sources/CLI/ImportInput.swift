import Dispatch
import Foundation
import Wire

/// The export stream that `lanchat import` reads, read twice in pieces so that memory does not
/// grow with its size: once to check its framing (a damaged stream is refused whole, before any
/// record is stored), then to store its records. A file is simply read twice; standard input,
/// which cannot be, is copied on the first pass into a temporary file in the data directory
/// (on disk, beside the store that will hold the same bytes) and removed afterwards.
struct ImportInput {
    /// Bytes read at a time.
    static let pieceSize = 1 << 20

    let path: String
    /// Whether `path` is the copy of standard input, to remove when done.
    let isCopy: Bool

    /// Checks the whole stream's framing, copying standard input first if that is the source;
    /// throws the stream's error, or a `CommandFailure` for a file that cannot be read.
    static func check(file: String?, console: Console, copyDirectory: String) throws -> ImportInput {
        var reader = ExportStream.Reader()
        if let file {
            let input = ImportInput(path: file, isCopy: false)
            try input.forEachPiece { _ = try reader.feed($0); _ = reader.takeChunks() }
            try reader.finish()
            return input
        }
        let copy = copyDirectory + "/import-\(UUID().uuidString).partial"
        guard FileManager.default.createFile(atPath: copy, contents: nil, attributes: [.posixPermissions: 0o600]),
              let handle = FileHandle(forWritingAtPath: copy) else {
            throw CommandFailure("cannot create \(copy) to hold standard input")
        }
        let input = ImportInput(path: copy, isCopy: true)
        do {
            defer { try? handle.close() }
            while true {
                let piece = try console.readInputPiece(pieceSize)
                if piece.isEmpty { break }
                _ = try reader.feed(piece)
                _ = reader.takeChunks()
                try handle.write(contentsOf: piece)
            }
            try reader.finish()
        } catch {
            input.remove()
            throw error
        }
        return input
    }

    /// Calls `body` with each piece of the file in order.
    func forEachPiece(_ body: ([UInt8]) throws -> Void) throws {
        let descriptor = open(path, O_RDONLY)
        guard descriptor >= 0 else { throw CommandFailure("cannot read \(path): \(String(cString: strerror(errno)))") }
        defer { close(descriptor) }
        while true {
            let piece = try Console.readPiece(from: descriptor, limit: ImportInput.pieceSize)
            if piece.isEmpty { return }
            try body(piece)
        }
    }

    func remove() {
        if isCopy { try? FileManager.default.removeItem(atPath: path) }
    }
}

/// Decodes and verifies a batch of record encodings on every core, keeping each one's outcome
/// in order (a refused record is reported with its reason, the others still stored).
enum BatchVerifier {
    final class Outcomes: @unchecked Sendable {
        var results: [Result<Wire.Record, any Error>?]
        init(count: Int) { results = Array(repeating: nil, count: count) }
    }

    /// Starts verifying `encodings` on other threads; `wait` on the returned group, then read
    /// the outcomes. The store meanwhile stores the previous batch on the caller's thread.
    static func start(_ encodings: [ArraySlice<UInt8>]) -> (DispatchGroup, Outcomes) {
        let outcomes = Outcomes(count: encodings.count)
        let group = DispatchGroup()
        let input = SendableEncodings(encodings)
        DispatchQueue.global().async(group: group) {
            let chunk = 64
            outcomes.results.withUnsafeMutableBufferPointer { buffer in
                let slots = SendableSlots(buffer)
                DispatchQueue.concurrentPerform(iterations: (input.value.count + chunk - 1) / chunk) { part in
                    for i in (part * chunk)..<min((part + 1) * chunk, input.value.count) {
                        slots.buffer[i] = Result { try Wire.Record.decode(Array(input.value[i])) }
                    }
                }
            }
        }
        return (group, outcomes)
    }

    private struct SendableEncodings: @unchecked Sendable {
        let value: [ArraySlice<UInt8>]
        init(_ value: [ArraySlice<UInt8>]) { self.value = value }
    }

    /// Each thread writes only its own positions.
    private struct SendableSlots: @unchecked Sendable {
        let buffer: UnsafeMutableBufferPointer<Result<Wire.Record, any Error>?>
        init(_ buffer: UnsafeMutableBufferPointer<Result<Wire.Record, any Error>?>) { self.buffer = buffer }
    }
}
