import Glibc

/// A request body written to a file as it arrives rather than held in memory: the REST writes
/// of the local API take bodies up to 256 MiB (Firebase's limit), which the node must not keep
/// in memory while a slow client sends them.
///
/// The file lives in a spool directory of the node's data directory and is removed when the
/// body is no longer wanted: after the request is answered, when the client goes away in the
/// middle of the body (the parser that owns it is dropped with the connection), and at start
/// (`removeLeftovers`) for a node that stopped in between.
public final class SpooledBody: @unchecked Sendable {
    /// The file's path.
    public let path: String
    private var descriptor: Int32
    /// Bytes written so far.
    public private(set) var count = 0
    private var removed = false
    /// The budget this file counts against until removed.
    private let budget: SpoolBudget?

    /// Creates an empty spool file in `directory` (created if missing), counted against
    /// `budget` until it is removed.
    public init(directory: String, budget: SpoolBudget? = nil) throws(HTTPError) {
        try budget?.take()
        _ = mkdir(directory, 0o700)
        var template = Array((directory + "/body-XXXXXX").utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard fd >= 0 else {
            budget?.give()
            throw .spoolFailed
        }
        descriptor = fd
        path = String(cString: template)
        self.budget = budget
    }

    deinit { remove() }

    /// Appends `bytes` to the file.
    public func append(_ bytes: ArraySlice<UInt8>) throws(HTTPError) {
        guard !bytes.isEmpty else { return }
        guard descriptor >= 0 else { throw .spoolFailed }
        let failed: Bool = bytes.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let n = write(descriptor, raw.baseAddress! + offset, raw.count - offset)
                if n < 0 {
                    if errno == EINTR { continue }
                    return true
                }
                offset += n
            }
            return false
        }
        guard !failed else { throw .spoolFailed }
        count += bytes.count
    }

    /// Closes the file for writing: the body is complete.
    public func finish() {
        if descriptor >= 0 { close(descriptor) }
        descriptor = -1
    }

    /// Closes and deletes the file; calling it again does nothing.
    public func remove() {
        finish()
        guard !removed else { return }
        removed = true
        unlink(path)
        budget?.give()
    }

    /// Reads the file a piece at a time: each call returns the next piece (at most
    /// `pieceBytes`), nil at its end. For the one consumer of the complete body.
    public func reader(pieceBytes: Int = 64 * 1024) throws(HTTPError) -> SpooledBodyReader {
        try SpooledBodyReader(path: path, pieceBytes: pieceBytes)
    }

    /// Deletes the spool files left in `directory` by a node that stopped while receiving.
    public static func removeLeftovers(in directory: String) {
        guard let dir = opendir(directory) else { return }
        defer { closedir(dir) }
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name.hasPrefix("body-") || name.hasPrefix("write-") { unlink(directory + "/" + name) }
        }
    }
}

/// Sequential reads of a complete spooled body.
public final class SpooledBodyReader {
    private var descriptor: Int32
    private let pieceBytes: Int
    /// Bytes read so far.
    public private(set) var offset = 0

    init(path: String, pieceBytes: Int) throws(HTTPError) {
        descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw .spoolFailed }
        self.pieceBytes = pieceBytes
    }

    deinit { if descriptor >= 0 { close(descriptor) } }

    /// The next piece, nil at the end of the file.
    public func next() throws(HTTPError) -> ArraySlice<UInt8>? {
        var piece = [UInt8](repeating: 0, count: pieceBytes)
        while true {
            let n = piece.withUnsafeMutableBytes { read(descriptor, $0.baseAddress!, pieceBytes) }
            if n < 0 {
                if errno == EINTR { continue }
                throw .spoolFailed
            }
            if n == 0 { return nil }
            offset += n
            return piece[0..<n]
        }
    }
}
