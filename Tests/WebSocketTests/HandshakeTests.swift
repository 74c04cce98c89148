import Foundation
import HTTP
import Testing
@testable import WebSocket

private func request(_ headers: [(String, String)], method: String = "GET", version: HTTPVersion = .http1_1) -> HTTPRequest {
    var parser = HTTPRequestParser()
    let versionText = version == .http1_1 ? "HTTP/1.1" : "HTTP/1.0"
    var text = "\(method) /.ws?v=5&ns=lanchat \(versionText)\r\nHost: 127.0.0.1:9000\r\n"
    for (name, value) in headers { text += "\(name): \(value)\r\n" }
    text += "\r\n"
    parser.append(Array(text.utf8))
    guard case let .request(request)? = try? parser.next() else { fatalError("the test's request does not parse") }
    return request
}

private let valid: [(String, String)] = [
    ("Upgrade", "websocket"), ("Connection", "keep-alive, Upgrade"),
    ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="), ("Sec-WebSocket-Version", "13"),
]

@Test func acceptKeyIsTheRFCExample() {
    #expect(WebSocketHandshake.accept(key: "dGhlIHNhbXBsZSBub25jZQ==") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
}

@Test func sha1MatchesTheFIPSVector() {
    let hex = SHA1.digest(Array("abc".utf8)).map { String(format: "%02x", $0) }.joined()
    #expect(hex == "a9993e364706816aba3e25717850c26c9cd0d89d")
}

@Test func aValidHandshakeSwitchesProtocols() throws {
    let r = request(valid)
    #expect(WebSocketHandshake.isUpgrade(r))
    guard case let .accepted(response) = WebSocketHandshake.response(to: r) else {
        Issue.record("refused")
        return
    }
    let text = String(decoding: response.serialized(), as: UTF8.self)
    #expect(text.hasPrefix("HTTP/1.1 101 "))
    #expect(text.contains("Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"))
    #expect(!text.contains("Content-Length"))
}

@Test func badHandshakesAreRefused() {
    func status(_ r: HTTPRequest) -> Int? {
        if case let .refused(response) = WebSocketHandshake.response(to: r) { return response.status }
        return nil
    }
    #expect(status(request(valid.filter { $0.0 != "Sec-WebSocket-Key" })) == 400)
    #expect(status(request(valid.map { $0.0 == "Sec-WebSocket-Key" ? ($0.0, "c2hvcnQ=") : $0 })) == 400)
    #expect(status(request(valid.map { $0.0 == "Sec-WebSocket-Version" ? ($0.0, "8") : $0 })) == 426)
    #expect(status(request(valid.map { $0.0 == "Connection" ? ($0.0, "keep-alive") : $0 })) == 400)
    #expect(status(request(valid, method: "POST")) == 400)
}
