import Foundation

/// Everything a command touches outside its data directory, so tests can run commands in-process
/// with their own input, output, environment and clock.
public struct Console {
    public var writeOut: (ArraySlice<UInt8>) -> Void
    public var writeErr: (String) -> Void
    /// Reads all of standard input (or fails).
    public var readInput: () throws -> [UInt8]
    /// Reads the next piece of standard input, at most the given number of bytes; empty at its
    /// end. For input of any size (`lanchat import`).
    public var readInputPiece: (Int) throws -> [UInt8]
    public var environment: [String: String]
    /// Wall-clock milliseconds since the Unix epoch.
    public var nowMillis: () -> UInt64
    /// Whether standard output is a terminal (binary output is refused there).
    public var outputIsTerminal: Bool

    public init(writeOut: @escaping (ArraySlice<UInt8>) -> Void, writeErr: @escaping (String) -> Void,
                readInput: @escaping () throws -> [UInt8], readInputPiece: ((Int) throws -> [UInt8])? = nil,
                environment: [String: String], nowMillis: @escaping () -> UInt64, outputIsTerminal: Bool) {
        self.writeOut = writeOut
        self.writeErr = writeErr
        self.readInput = readInput
        self.readInputPiece = readInputPiece ?? Console.pieces(of: readInput)
        self.environment = environment
        self.nowMillis = nowMillis
        self.outputIsTerminal = outputIsTerminal
    }

    func print(_ line: String) { writeOut(ArraySlice((line + "\n").utf8)) }
    func printError(_ line: String) { writeErr(line + "\n") }

    /// The process's real standard streams, environment and clock.
    public static var standard: Console {
        Console(
            writeOut: { bytes in
                bytes.withUnsafeBytes { buffer in
                    var offset = 0
                    while offset < buffer.count {
                        let n = write(1, buffer.baseAddress! + offset, buffer.count - offset)
                        if n < 0 { if errno == EINTR { continue }; return }
                        offset += n
                    }
                }
            },
            writeErr: { FileHandle.standardError.write(Data($0.utf8)) },
            readInput: { Array(FileHandle.standardInput.readDataToEndOfFile()) },
            readInputPiece: { limit in try Console.readPiece(from: 0, limit: limit) },
            environment: ProcessInfo.processInfo.environment,
            nowMillis: { UInt64(Date().timeIntervalSince1970 * 1000) },
            outputIsTerminal: isatty(1) == 1
        )
    }
}

/// A command that failed for a reason the user can act on: `Error: message`, exit status 1.
struct CommandFailure: Error {
    let message: String
    init(_ message: String) { self.message = message }
}

extension Console {
    /// Up to `limit` bytes read from `descriptor` (fewer when less is available; empty at the end).
    static func readPiece(from descriptor: Int32, limit: Int) throws -> [UInt8] {
        try [UInt8](unsafeUninitializedCapacity: limit) { buffer, count in
            while true {
                let n = read(descriptor, buffer.baseAddress, limit)
                if n < 0 && errno == EINTR { continue }
                guard n >= 0 else { throw CommandFailure("cannot read standard input: \(String(cString: strerror(errno)))") }
                count = n
                return
            }
        }
    }

    /// Pieces served from what `readAll` returns, read on the first call: for consoles whose
    /// input is already in memory (tests).
    static func pieces(of readAll: @escaping () throws -> [UInt8]) -> (Int) throws -> [UInt8] {
        final class Remaining { var bytes: ArraySlice<UInt8>? }
        let remaining = Remaining()
        return { limit in
            if remaining.bytes == nil { remaining.bytes = try readAll()[...] }
            let piece = remaining.bytes!.prefix(limit)
            remaining.bytes = remaining.bytes!.dropFirst(piece.count)
            return Array(piece)
        }
    }
}
