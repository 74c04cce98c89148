/// An HTTP/1.1 request parser as a state machine: bytes in, requests out, no IO.
///
/// Feed what the connection delivers with `append(_:)`, then call `next()` until it returns nil
/// (it needs more bytes). Pipelined requests come out one per call, in order. Memory is bounded
/// by `HTTPLimits`: a line is refused as soon as it cannot fit, a body as soon as it announces
/// or reaches more than the limit, and consumed input is dropped. (Bytes appended but not yet
/// parsed are the caller's to bound: append only after `next()` returned nil.) With an
/// `HTTPSpoolPolicy`, a body above the limit of a request the policy accepts is written to a
/// file as it arrives (`SpooledBody`), up to the policy's own limit, and never held.
///
/// The parser is strict where leniency lets two parsers disagree about where a request ends:
/// lines end only with CRLF, header names are tokens with no space before the colon, folded
/// lines are refused, and `Content-Length` with `Transfer-Encoding` is an error. After any error
/// the parser stays failed (every `next()` rethrows it): the server answers `error.status`
/// and closes the connection.
public struct HTTPRequestParser: Sendable {
    /// Where the parser is in the current request.
    enum State: Sendable {
        /// Waiting for a request line (empty lines before it are skipped, RFC 9112 §2.2).
        case requestLine
        /// Reading header lines until the empty line.
        case headers
        /// Reading a `Content-Length` body; `remaining` bytes still to come.
        case fixedBody(remaining: Int)
        /// Waiting for a chunk-size line.
        case chunkSize
        /// Reading a chunk's data.
        case chunkData(remaining: Int)
        /// Waiting for the CRLF that ends a chunk's data.
        case chunkDataEnd
        /// Reading (and discarding) trailer lines after the last chunk.
        case trailers
        /// An error ended parsing for good.
        case failed(HTTPError)
    }

    /// The bounds this parser enforces.
    public let limits: HTTPLimits

    private var state: State = .requestLine
    private var buffer: [UInt8] = []
    /// Start of the unconsumed input in `buffer`.
    private var readIndex = 0
    /// Where the search for the next LF resumes, so a line fed byte by byte is scanned once.
    private var scanIndex = 0
    private var head: HTTPRequestHead?
    private var body: [UInt8] = []
    /// Bytes of header and trailer lines of the current request, against `maxHeaderBytes`.
    private var headerBytes = 0
    /// Header and trailer lines of the current request, against `maxHeaderCount`.
    private var headerCount = 0
    private var continuePending = false
    /// Where bodies too large for memory may go, for the requests it accepts.
    private let spoolPolicy: HTTPSpoolPolicy?
    /// The current request's body file, once it went to one: its bytes are written there
    /// instead of `body`.
    private var spool: SpooledBody?
    /// Whether the current request may have its body spooled (`spoolPolicy` accepted it).
    private var spoolable = false

    /// A parser enforcing `limits`; with `spool`, the bodies of the requests it accepts may be
    /// larger, up to its limit, and are written to files as they arrive.
    public init(limits: HTTPLimits = .default, spool: HTTPSpoolPolicy? = nil) {
        self.limits = limits
        self.spoolPolicy = spool
    }

    /// Adds bytes received from the connection. Ignored once the parser has failed.
    public mutating func append(_ bytes: some Sequence<UInt8>) {
        if case .failed = state { return }
        buffer.append(contentsOf: bytes)
    }

    /// The next event, or nil when more bytes are needed. Throws the error that ended parsing,
    /// now and on every later call.
    public mutating func next() throws(HTTPError) -> HTTPParserEvent? {
        if case .failed(let error) = state { throw error }
        do {
            let event = try step()
            compact()
            return event
        } catch {
            state = .failed(error)
            buffer = []
            body = []
            spool?.remove()
            spool = nil
            head = nil
            readIndex = 0
            scanIndex = 0
            throw error
        }
    }

    /// Whether no request is in progress and no input is waiting: a connection that ends now
    /// ends cleanly (otherwise the peer closed in the middle of a request).
    public var isIdle: Bool {
        guard case .requestLine = state else { return false }
        return readIndex == buffer.count
    }

    /// Hands over the bytes received after the last request, and stops parsing: for a
    /// connection that switches protocols (a websocket upgrade), whose next bytes are frames;
    /// the parser is not used again on that connection.
    public mutating func takeRemainingBytes() -> [UInt8] {
        let rest = Array(buffer[readIndex...])
        buffer = []
        readIndex = 0
        scanIndex = 0
        state = .requestLine
        return rest
    }

    /// Whether an error has ended parsing.
    public var hasFailed: Bool {
        if case .failed = state { return true }
        return false
    }

    // MARK: - The state machine

    private mutating func step() throws(HTTPError) -> HTTPParserEvent? {
        while true {
            if continuePending {
                continuePending = false
                return .continueExpected
            }
            switch state {
            case .failed(let error):
                throw error

            case .requestLine:
                guard let line = try readLine(limit: limits.maxRequestLineBytes, tooLong: .requestLineTooLong) else { return nil }
                if line.isEmpty { continue }
                head = try parseRequestLine(buffer[line])
                headerBytes = 0
                headerCount = 0
                state = .headers

            case .headers:
                guard let line = try readHeaderLine() else { return nil }
                if line.isEmpty {
                    if let event = try finishHead() { return event }
                    continue
                }
                let field = try parseHeaderLine(buffer[line])
                head?.headers.append(field)

            case .fixedBody(let remaining):
                let taken = try takeBody(upTo: remaining)
                if taken < remaining {
                    state = .fixedBody(remaining: remaining - taken)
                    return nil
                }
                return finishRequest()

            case .chunkSize:
                guard let line = try readLine(limit: limits.maxHeaderLineBytes, tooLong: .malformedChunk) else { return nil }
                let size = try parseChunkSize(buffer[line])
                state = size == 0 ? .trailers : .chunkData(remaining: size)

            case .chunkData(let remaining):
                let taken = try takeBody(upTo: remaining)
                if taken < remaining {
                    state = .chunkData(remaining: remaining - taken)
                    return nil
                }
                state = .chunkDataEnd

            case .chunkDataEnd:
                let available = buffer.count - readIndex
                if available >= 1, buffer[readIndex] != ASCII.cr { throw .malformedChunk }
                if available >= 2, buffer[readIndex + 1] != ASCII.lf { throw .malformedChunk }
                guard available >= 2 else { return nil }
                readIndex += 2
                scanIndex = readIndex
                state = .chunkSize

            case .trailers:
                guard let line = try readHeaderLine() else { return nil }
                if line.isEmpty { return finishRequest() }
                // Trailers are validated like headers, counted, and dropped: nothing in the
                // local API reads them, and merging them into the headers invites confusion.
                _ = try parseHeaderLine(buffer[line])
            }
        }
    }

    /// The range of the next line's content (without its CRLF), or nil when the line is not
    /// complete yet. Throws `tooLong` as soon as the line cannot fit in `limit` bytes, so a
    /// missing LF cannot make the buffer grow without bound.
    private mutating func readLine(limit: Int, tooLong: HTTPError) throws(HTTPError) -> Range<Int>? {
        let start = readIndex
        // The longest acceptable line is `limit` bytes plus CR and LF.
        let (allowed, overflow) = start.addingReportingOverflow(limit &+ 2)
        let scanEnd = overflow ? buffer.count : min(buffer.count, allowed)
        var index = max(scanIndex, start)
        while index < scanEnd, buffer[index] != ASCII.lf { index += 1 }
        guard index < scanEnd else {
            if !overflow, scanEnd == allowed { throw tooLong }
            scanIndex = scanEnd
            return nil
        }
        guard index > start, buffer[index - 1] == ASCII.cr else { throw .malformedLineEnding }
        let content = start..<(index - 1)
        guard content.count <= limit else { throw tooLong }
        readIndex = index + 1
        scanIndex = readIndex
        return content
    }

    /// The next header or trailer line, enforcing the per-line, total and count limits.
    private mutating func readHeaderLine() throws(HTTPError) -> Range<Int>? {
        let budget = max(0, limits.maxHeaderBytes - headerBytes)
        let line: Range<Int>?
        if budget < limits.maxHeaderLineBytes {
            line = try readLine(limit: budget, tooLong: .headersTooLarge)
        } else {
            line = try readLine(limit: limits.maxHeaderLineBytes, tooLong: .headerLineTooLong)
        }
        guard let line else { return nil }
        if !line.isEmpty {
            headerBytes += line.count
            headerCount += 1
            guard headerCount <= limits.maxHeaderCount else { throw .tooManyHeaders }
        }
        return line
    }

    /// Moves up to `count` available bytes into the body (or its spool file); returns how many
    /// were moved.
    private mutating func takeBody(upTo count: Int) throws(HTTPError) -> Int {
        let taken = min(count, buffer.count - readIndex)
        if let spool {
            try spool.append(buffer[readIndex..<(readIndex + taken)])
        } else {
            body.append(contentsOf: buffer[readIndex..<(readIndex + taken)])
        }
        readIndex += taken
        scanIndex = readIndex
        return taken
    }

    /// Decides the body's framing once the head is complete; returns the request when it has
    /// no body.
    private mutating func finishHead() throws(HTTPError) -> HTTPParserEvent? {
        guard let head else { throw .malformedRequestLine }
        let request = head.request(body: [])
        let hosts = request.headerValues("host")
        if hosts.count > 1 || (head.version == .http1_1 && hosts.isEmpty) { throw .invalidHost }
        if head.version == .http1_1 {
            for expectation in request.headerValues("expect") where !ASCII.equalsIgnoringCase(expectation, "100-continue") {
                throw .unsupportedExpectation
            }
        }
        spoolable = spoolPolicy.map { $0.maxBytes > limits.maxBodyBytes && $0.accepts(request) } ?? false
        let maxBody = spoolable ? spoolPolicy!.maxBytes : limits.maxBodyBytes
        let framing = try HTTPBodyFraming(request: request, maxBodyBytes: maxBody)
        switch framing {
        case .none:
            return finishRequest()
        case .length(let length):
            if length > limits.maxBodyBytes, let policy = spoolPolicy {
                spool = try SpooledBody(directory: policy.directory, budget: policy.budget)
            } else {
                body.reserveCapacity(min(length, 64 * 1024))
            }
            state = .fixedBody(remaining: length)
        case .chunked:
            state = .chunkSize
        }
        continuePending = request.expectsContinue
        return nil
    }

    /// Hands out the finished request and gets ready for the next one.
    private mutating func finishRequest() -> HTTPParserEvent? {
        var finishedBody: [UInt8] = []
        swap(&finishedBody, &body)
        var request = head?.request(body: finishedBody)
        if let spool {
            spool.finish()
            request?.spooledBody = spool
        }
        spool = nil
        spoolable = false
        head = nil
        state = .requestLine
        return request.map { .request($0) }
    }

    /// Drops consumed input so memory follows the unparsed bytes, not the connection's lifetime.
    private mutating func compact() {
        if readIndex == buffer.count {
            buffer.removeAll(keepingCapacity: buffer.capacity <= 64 * 1024)
            readIndex = 0
            scanIndex = 0
        } else if readIndex >= 4096, readIndex * 2 >= buffer.count {
            buffer.removeSubrange(0..<readIndex)
            scanIndex -= readIndex
            readIndex = 0
        }
    }

    /// Checks a chunk-size line (`hex [BWS ; extensions]`), returns the size and enforces the
    /// body limit on the running total before any of the chunk is read. A spoolable body that
    /// outgrows the memory limit moves to its spool file here, before the chunk is read.
    private mutating func parseChunkSize(_ line: ArraySlice<UInt8>) throws(HTTPError) -> Int {
        var index = line.startIndex
        var size = 0
        let received = spool?.count ?? body.count
        let room = (spoolable ? spoolPolicy!.maxBytes : limits.maxBodyBytes) - received
        while index < line.endIndex, let digit = ASCII.hexValue(line[index]) {
            // Once past the room left, more digits only make it larger: stop counting.
            if size <= room { size = size > (Int.max - 15) / 16 ? Int.max : size * 16 + Int(digit) }
            index += 1
        }
        guard index > line.startIndex else { throw .malformedChunk }
        while index < line.endIndex, ASCII.isWhitespace(line[index]) { index += 1 }
        if index < line.endIndex {
            // Chunk extensions are allowed and ignored; they must still be clean text.
            guard line[index] == ASCII.semicolon, line[index...].allSatisfy(ASCII.isFieldValueByte) else {
                throw .malformedChunk
            }
        }
        guard size <= room else { throw .bodyTooLarge }
        if spool == nil, let policy = spoolPolicy, spoolable, received + size > limits.maxBodyBytes {
            let file = try SpooledBody(directory: policy.directory, budget: policy.budget)
            try file.append(body[...])
            body = []
            spool = file
        }
        return size
    }
}
