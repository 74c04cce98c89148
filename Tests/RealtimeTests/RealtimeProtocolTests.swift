import Foundation
import Testing
import Tree
import WebSocket
@testable import Realtime

// MARK: - Framing

@Test func shortMessagesGoWhole() {
    #expect(RealtimeFrames.split("{\"t\":\"d\"}") == ["{\"t\":\"d\"}"])
}

@Test func longMessagesGoAsACountAndPiecesThatRejoin() throws {
    // Multi-byte text on the piece boundaries: no piece may split a character.
    let text = String(repeating: "ab😀é", count: 10000)
    let pieces = RealtimeFrames.split(text)
    #expect(Int(pieces[0]) == pieces.count - 1)
    #expect(pieces.dropFirst().allSatisfy { $0.utf16.count <= RealtimeFrames.maxFrameCharacters })
    #expect(pieces.dropFirst().joined() == text)
    var assembler = RealtimeFrameAssembler(maxMessageBytes: 1 << 20)
    var whole: [UInt8]?
    for piece in pieces { whole = try assembler.receive(Array(piece.utf8)) ?? whole }
    #expect(whole == Array(text.utf8))
}

@Test func keepAliveIsNothing() throws {
    var assembler = RealtimeFrameAssembler(maxMessageBytes: 100)
    #expect(try assembler.receive(Array("0".utf8)) == nil)
    #expect(try assembler.receive(Array("{}".utf8)) == Array("{}".utf8))
}

@Test func piecesBeyondTheBoundAreRefused() throws {
    var assembler = RealtimeFrameAssembler(maxMessageBytes: 100)
    #expect(try assembler.receive(Array("3".utf8)) == nil)
    #expect(try assembler.receive([UInt8](repeating: 0x61, count: 60)) == nil)
    #expect(throws: RealtimeError.self) { try assembler.receive([UInt8](repeating: 0x61, count: 60)) }
}

// MARK: - Messages

@Test func requestsAndControlMessagesParse() throws {
    let limits = JSONLimits()
    let put = try RealtimeMessage.parse(Array(#"{"t":"d","d":{"r":3,"a":"p","b":{"p":"/a","d":1}}}"#.utf8), limits: limits)
    #expect(put == .request(number: .number(3), action: "p", body: ["p": "/a", "d": .number(1)]))
    #expect(try RealtimeMessage.parse(Array(#"{"t":"c","d":{"t":"p","d":{}}}"#.utf8), limits: limits) == .ping)
    for bad in [#"[1]"#, #"{"t":"d","d":{"a":"p"}}"#, #"{"t":"d","d":{"r":1,"a":"p","b":3}}"#, #"{"t":"x","d":{}}"#, "not json"] {
        #expect(throws: RealtimeError.self) { try RealtimeMessage.parse(Array(bad.utf8), limits: limits) }
    }
}

@Test func repliesAreShapedAsTheSDKReadsThem() throws {
    let hello = RealtimeReply.handshake(timestampMillis: 1700000000000, host: "127.0.0.1:9", session: "abc")
    #expect(hello.serialized() == #"{"d":{"d":{"h":"127.0.0.1:9","s":"abc","ts":1700000000000,"v":"5"},"t":"h"},"t":"c"}"#)
    let data = RealtimeReply.data(try Path("a/b"), .number(1), tag: .number(2))
    #expect(data.serialized() == #"{"d":{"a":"d","b":{"d":1,"p":"a/b","t":2}},"t":"d"}"#)
    #expect(RealtimeReply.response(.number(1), status: "datastale", data: "x").serialized() == #"{"d":{"b":{"d":"x","s":"datastale"},"r":1},"t":"d"}"#)
}

// MARK: - Hashes

@Test func hashesAreTheSDKs() {
    func b64sha1(_ s: String) -> String { Data(SHA1.digest(Array(s.utf8))).base64EncodedString() }
    #expect(RealtimeHash.of(.null) == "")
    #expect(RealtimeHash.of(.object([:])) == "")
    #expect(RealtimeHash.of(.string("hi")) == b64sha1("string:hi"))
    #expect(RealtimeHash.of(.bool(true)) == b64sha1("boolean:true"))
    // 1.0 is 0x3FF0000000000000.
    #expect(RealtimeHash.of(.number(1)) == b64sha1("number:3ff0000000000000"))
    // Children in key order (integer keys first, numerically), empty children skipped.
    let value: JSONValue = .object(["b": .number(1), "10": .string("x"), "9": .bool(false), "e": .object([:])])
    let expected = b64sha1(":9:" + b64sha1("boolean:false") + ":10:" + b64sha1("string:x") + ":b:" + b64sha1("number:3ff0000000000000"))
    #expect(RealtimeHash.of(value) == expected)
}

// MARK: - Credentials

@Test func theTokenIsAcceptedBareOrAsAMockUserToken() {
    func part(_ json: String) -> String {
        Data(json.utf8).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
    let header = part(#"{"alg":"none","type":"JWT"}"#)
    #expect(RealtimeCredential.accepts("s3cret", token: "s3cret"))
    #expect(!RealtimeCredential.accepts("s3cre", token: "s3cret"))
    #expect(!RealtimeCredential.accepts("", token: ""))
    #expect(RealtimeCredential.accepts(header + "." + part(#"{"sub":"s3cret","iat":1}"#) + ".", token: "s3cret"))
    #expect(RealtimeCredential.accepts(header + "." + part(#"{"user_id":"s3cret"}"#) + ".", token: "s3cret"))
    #expect(!RealtimeCredential.accepts(header + "." + part(#"{"sub":"other"}"#) + ".", token: "s3cret"))
    // A signed token is not one the SDK made for a mock user.
    #expect(!RealtimeCredential.accepts(part(#"{"alg":"RS256"}"#) + "." + part(#"{"sub":"s3cret"}"#) + ".", token: "s3cret"))
    #expect(!RealtimeCredential.accepts(header + "." + part(#"{"sub":"s3cret"}"#) + ".sig", token: "s3cret"))
}

// MARK: - onDisconnect

@Test func cancelForgetsWritesAtAndBelowAPath() throws {
    var queue = RealtimeOnDisconnect()
    try queue.add(.set(try Path("presence/me"), "offline"))
    try queue.add(.set(try Path("presence/me/since"), .number(1)))
    try queue.add(.update(try Path("presence"), ["me/last": .number(2), "you": .number(3)]))
    try queue.add(.set(try Path("other"), .number(4)))
    queue.cancel(at: try Path("presence/me"))
    #expect(queue.operations == [.update(try Path("presence"), ["you": .number(3)]), .set(try Path("other"), .number(4))])
}

@Test func onDisconnectWritesAreBounded() throws {
    var queue = RealtimeOnDisconnect(maxOperations: 2, maxBytes: 20)
    try queue.add(.set(try Path("a"), .number(1)))
    #expect(throws: RealtimeError.self) { try queue.add(.set(try Path("b"), .string(String(repeating: "x", count: 30)))) }
    try queue.add(.set(try Path("c"), .number(1)))
    #expect(throws: RealtimeError.self) { try queue.add(.set(try Path("d"), .number(1))) }
}

@Test func splittingCountsUTF16UnitsAsTheSDKDoes() {
    let limit = RealtimeFrames.maxFrameCharacters
    #expect(RealtimeFrames.split(String(repeating: "a", count: limit)).count == 1)
    #expect(RealtimeFrames.split(String(repeating: "a", count: limit + 1)) == ["2", String(repeating: "a", count: limit), "a"])
    // An emoji is two UTF-16 units (four UTF-8 bytes): half the limit of them fill one piece.
    #expect(RealtimeFrames.split(String(repeating: "😀", count: limit / 2)).count == 1)
    let pieces = RealtimeFrames.split("a" + String(repeating: "😀", count: limit / 2))
    #expect(pieces.count == 3 && pieces[1].utf16.count == limit - 1 && pieces[2] == "😀")
}
