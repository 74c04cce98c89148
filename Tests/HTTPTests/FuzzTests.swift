import HTTP
import Testing
import TestSupport

/// Random and mutated input never crashes or hangs the parser: every run ends in requests, a
/// wait for more bytes, or an error, and buffered memory stays within the limits.
@Suite("HTTP parser fuzzing")
struct FuzzTests {
    static let seeds: [String] = [
        "GET /a.json?x=1 HTTP/1.1\r\nHost: h\r\n\r\n",
        "PUT /a%20b.json HTTP/1.1\r\nHost: h\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\nnull",
        "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n3;e\r\nabc\r\n0\r\nT: 1\r\n\r\n",
        "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
    ]
    static let limits = HTTPLimits(maxRequestLineBytes: 128, maxHeaderLineBytes: 64, maxHeaderBytes: 256,
                                   maxHeaderCount: 8, maxBodyBytes: 512)

    /// Feeds `bytes` in random pieces; returns normally whatever happens.
    func run(_ bytes: [UInt8], rng: inout SplitMix64) {
        var parser = HTTPRequestParser(limits: Self.limits)
        var index = 0
        var steps = 0
        while index < bytes.count {
            let size = Int.random(in: 1...64, using: &rng)
            let end = min(bytes.count, index + size)
            parser.append(bytes[index..<end])
            index = end
            do {
                while let event = try parser.next() {
                    steps += 1
                    if case .request(let request) = event {
                        #expect(request.body.count <= Self.limits.maxBodyBytes)
                        #expect(request.headers.count <= Self.limits.maxHeaderCount)
                    }
                    // Every event consumes input, so a run is bounded by its length.
                    #expect(steps <= bytes.count + 1)
                }
            } catch {
                #expect(parser.hasFailed)
                #expect((400...505).contains(error.status))
                return
            }
        }
    }

    @Test func randomBytes() {
        var rng = SplitMix64(seed: 0x1a2b_3c4d)
        for _ in 0..<2000 {
            let count = Int.random(in: 0...300, using: &rng)
            let bytes = (0..<count).map { _ in UInt8.random(in: 0...255, using: &rng) }
            run(bytes, rng: &rng)
        }
    }

    @Test func randomGrammarPieces() {
        // Pieces of the grammar in random order reach far deeper than uniform noise.
        let pieces = ["GET", "PUT", " ", "/", "a", "%", "2F", "%C3%A9", "?", "=", "&", "+", "HTTP/1.1", "HTTP/1.0",
                      "\r\n", "\r", "\n", ":", "Host", "Content-Length", "Transfer-Encoding", "chunked", "0", "5",
                      "f", ";", "Expect", "100-continue", "Connection", "close", "\t", "\u{00}", "é"]
        var rng = SplitMix64(seed: 42)
        for _ in 0..<3000 {
            let text = (0..<Int.random(in: 1...80, using: &rng)).map { _ in pieces.randomElement(using: &rng)! }.joined()
            run(Array(text.utf8), rng: &rng)
        }
    }

    @Test func mutatedValidRequests() {
        var rng = SplitMix64(seed: 7)
        for _ in 0..<3000 {
            var bytes = Array(Self.seeds.randomElement(using: &rng)!.utf8)
            for _ in 0..<Int.random(in: 1...4, using: &rng) {
                let position = Int.random(in: 0..<bytes.count, using: &rng)
                switch Int.random(in: 0...2, using: &rng) {
                case 0: bytes[position] = UInt8.random(in: 0...255, using: &rng)
                case 1: bytes.remove(at: position)
                default: bytes.insert(UInt8.random(in: 0...255, using: &rng), at: position)
                }
                if bytes.isEmpty { break }
            }
            run(bytes, rng: &rng)
        }
    }

    @Test func endlessInputIsRefusedWithinTheLimits() {
        // No line end ever: refused once a line cannot fit.
        var parser = HTTPRequestParser(limits: Self.limits)
        var refused = false
        for _ in 0..<100 where !refused {
            parser.append(repeatElement(UInt8(ascii: "A"), count: 50))
            do { _ = try parser.next() } catch { refused = true }
        }
        #expect(refused)
        // Endless headers: refused by the byte or count budget.
        var headers = HTTPRequestParser(limits: Self.limits)
        headers.append(Array("GET / HTTP/1.1\r\n".utf8))
        refused = false
        for index in 0..<100 where !refused {
            headers.append(Array("X\(index): v\r\n".utf8))
            do { _ = try headers.next() } catch { refused = true }
        }
        #expect(refused)
    }
}
