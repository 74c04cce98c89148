import Foundation
import HTTP
import Testing

/// Bodies above the in-memory limit, for the requests a spool policy accepts: written to a file
/// as they arrive, bounded by the policy's own limit, and never left behind.
@Suite("Spooled bodies")
struct SpoolTests {
    let limits = HTTPLimits(maxBodyBytes: 1024)

    func directory() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("lanchat-spool-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    func files(_ directory: String) -> [String] {
        (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
    }

    func policy(_ directory: String) -> HTTPSpoolPolicy {
        HTTPSpoolPolicy(directory: directory, maxBytes: 8192) { $0.method == "PUT" }
    }

    func body(_ count: Int) -> [UInt8] { (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 1) } }

    /// Feeds `input` in pieces of `piece` bytes; returns the requests and the error.
    func run(_ parser: inout HTTPRequestParser, _ input: [UInt8], piece: Int = 333) -> ([HTTPRequest], HTTPError?) {
        var out = [HTTPRequest]()
        do {
            var offset = 0
            while offset < input.count {
                parser.append(input[offset..<min(input.count, offset + piece)])
                offset += piece
                while let event = try parser.next() {
                    if case let .request(request) = event { out.append(request) }
                }
            }
            return (out, nil)
        } catch {
            return (out, error)
        }
    }

    @Test("an accepted body above the memory limit goes to a file, byte for byte; the file goes when the request does")
    func spooled() throws {
        let dir = try directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let content = body(5000)
        var parser = HTTPRequestParser(limits: limits, spool: policy(dir))
        let input = Array("PUT /a.json HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n\r\n".utf8) + content
            + Array("PUT /b.json HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc".utf8)
        var (requests, error) = run(&parser, input)
        #expect(error == nil)
        #expect(requests.count == 2)
        let spool = try #require(requests.first?.spooledBody)
        #expect(requests[0].body.isEmpty)
        #expect(spool.count == 5000)
        #expect(try Data(contentsOf: URL(fileURLWithPath: spool.path)) == Data(content))
        // A small body stays in memory.
        #expect(requests[1].spooledBody == nil && requests[1].body == Array("abc".utf8))
        var read = [UInt8]()
        let reader = try spool.reader(pieceBytes: 700)
        while let piece = try reader.next() { read += piece }
        #expect(read == content)
        requests.removeAll()
        spool.remove()
        #expect(files(dir).isEmpty)
    }

    @Test("a chunked body moves to a file once it outgrows the memory limit")
    func chunked() throws {
        let dir = try directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let content = body(1800)
        var input = Array("PUT /a.json HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n".utf8)
        for start in stride(from: 0, to: 1800, by: 600) {
            input += Array("258\r\n".utf8) + content[start..<start + 600] + Array("\r\n".utf8)
        }
        input += Array("0\r\n\r\n".utf8)
        var parser = HTTPRequestParser(limits: limits, spool: policy(dir))
        let (requests, error) = run(&parser, input, piece: 100)
        #expect(error == nil)
        let spool = try #require(requests.first?.spooledBody)
        #expect(try Data(contentsOf: URL(fileURLWithPath: spool.path)) == Data(content))
    }

    @Test("over the policy's limit, or a request it does not accept: 413 before the body, no file")
    func refused() throws {
        let dir = try directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var parser = HTTPRequestParser(limits: limits, spool: policy(dir))
        let (_, tooLarge) = run(&parser, Array("PUT /a.json HTTP/1.1\r\nHost: x\r\nContent-Length: 8193\r\n\r\n".utf8))
        #expect(tooLarge == .bodyTooLarge)
        var other = HTTPRequestParser(limits: limits, spool: policy(dir))
        let (_, notAccepted) = run(&other, Array("POST /a.json HTTP/1.1\r\nHost: x\r\nContent-Length: 2000\r\n\r\n".utf8))
        #expect(notAccepted == .bodyTooLarge)
        var chunked = HTTPRequestParser(limits: limits, spool: policy(dir))
        var input = Array("PUT /a.json HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n".utf8)
        for _ in 0..<3 { input += Array("BB8\r\n".utf8) + body(3000) + Array("\r\n".utf8) }
        let (_, chunkedTooLarge) = run(&chunked, input)
        #expect(chunkedTooLarge == .bodyTooLarge)
        #expect(files(dir).isEmpty)
    }

    @Test("a client gone in the middle of the body leaves no file; nor does a node stopped then")
    func abandoned() throws {
        let dir = try directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        do {
            var parser = HTTPRequestParser(limits: limits, spool: policy(dir))
            let (requests, error) = run(&parser, Array("PUT /a.json HTTP/1.1\r\nHost: x\r\nContent-Length: 6000\r\n\r\n".utf8) + body(3000))
            #expect(requests.isEmpty && error == nil)
            #expect(files(dir).count == 1)
        }
        #expect(files(dir).isEmpty)
        // A file left by a process that stopped is removed at start.
        FileManager.default.createFile(atPath: dir + "/body-leftover", contents: Data([1, 2, 3]))
        FileManager.default.createFile(atPath: dir + "/write-leftover.sqlite", contents: Data([1, 2, 3]))
        SpooledBody.removeLeftovers(in: dir)
        #expect(files(dir).isEmpty)
    }

    @Test("spool files are bounded in number: one more large body is refused with 429 until one goes")
    func budget() throws {
        let dir = try directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let budget = SpoolBudget(files: 1)
        let shared = HTTPSpoolPolicy(directory: dir, maxBytes: 8192, budget: budget) { _ in true }
        let input = Array("PUT /a.json HTTP/1.1\r\nHost: x\r\nContent-Length: 2000\r\n\r\n".utf8) + body(2000)
        var first = HTTPRequestParser(limits: limits, spool: shared)
        let (held, error) = run(&first, input)
        #expect(error == nil && held.first?.spooledBody != nil)
        var second = HTTPRequestParser(limits: limits, spool: shared)
        let (_, busy) = run(&second, input)
        #expect(busy == .spoolBusy && busy?.status == 429)
        // A small body needs no file.
        var small = HTTPRequestParser(limits: limits, spool: shared)
        #expect(run(&small, Array("PUT /a.json HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc".utf8)).1 == nil)
        held.first?.spooledBody?.remove()
        #expect(budget.used == 0)
        var third = HTTPRequestParser(limits: limits, spool: shared)
        let (later, none) = run(&third, input)
        #expect(none == nil && later.first?.spooledBody?.count == 2000)
    }
}
