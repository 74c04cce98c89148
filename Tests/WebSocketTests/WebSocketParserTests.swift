import Testing
@testable import WebSocket

/// A client's frame: masked with a fixed key, as RFC 6455 requires of clients.
private func clientFrame(_ opcode: WebSocketOpcode, _ payload: [UInt8], fin: Bool = true) -> [UInt8] {
    WebSocketFrameWriter.frame(opcode, payload, fin: fin, mask: [0x37, 0xFA, 0x21, 0x3D])
}

private func events(_ bytes: [UInt8], max: Int = 1 << 20) throws -> [WebSocketEvent] {
    var parser = WebSocketParser(maxMessageBytes: max)
    parser.append(bytes)
    var out: [WebSocketEvent] = []
    while let event = try parser.next() { out.append(event) }
    return out
}

private func failure(_ bytes: [UInt8], max: Int = 1 << 20) -> WebSocketFailure? {
    do {
        _ = try events(bytes, max: max)
        return nil
    } catch {
        return error as? WebSocketFailure
    }
}

@Test func maskedTextFromRFCExample() throws {
    // RFC 6455 §5.7: a single-frame masked text message "Hello".
    let bytes: [UInt8] = [0x81, 0x85, 0x37, 0xFA, 0x21, 0x3D, 0x7F, 0x9F, 0x4D, 0x51, 0x58]
    #expect(try events(bytes) == [.text(Array("Hello".utf8))])
}

@Test func serverFramesMatchTheRFCExamples() {
    #expect(WebSocketFrameWriter.text("Hello") == [0x81, 0x05, 0x48, 0x65, 0x6C, 0x6C, 0x6F])
    let big = WebSocketFrameWriter.frame(.binary, [UInt8](repeating: 0, count: 256))
    #expect(Array(big.prefix(4)) == [0x82, 0x7E, 0x01, 0x00])
    let huge = WebSocketFrameWriter.frame(.binary, [UInt8](repeating: 0, count: 65536))
    #expect(Array(huge.prefix(10)) == [0x82, 0x7F, 0, 0, 0, 0, 0, 1, 0, 0])
}

@Test func fragmentsAreJoinedAndControlFramesMayInterleave() throws {
    let bytes = clientFrame(.text, Array("Hel".utf8), fin: false) + clientFrame(.ping, [1, 2])
        + clientFrame(.continuation, Array("lo".utf8), fin: false) + clientFrame(.continuation, Array(" there".utf8))
    #expect(try events(bytes) == [.ping([1, 2]), .text(Array("Hello there".utf8))])
}

@Test func bytesArrivingOneAtATimeGiveTheSameEvents() throws {
    let long = [UInt8](repeating: 0x61, count: 70000)
    let bytes = clientFrame(.text, long) + clientFrame(.close, [0x03, 0xE8] + Array("bye".utf8))
    var parser = WebSocketParser(maxMessageBytes: 1 << 20)
    var out: [WebSocketEvent] = []
    for byte in bytes {
        parser.append([byte])
        while let event = try parser.next() { out.append(event) }
    }
    #expect(out == [.text(long), .close(code: .normal, reason: "bye")])
    #expect(parser.bufferedBytes == 0)
}

@Test func unmaskingHandlesEveryAlignment() {
    for count in 0..<20 {
        let payload = (0..<count).map { UInt8($0 * 7 & 0xFF) }
        let framed = clientFrame(.binary, payload)
        #expect((try? events(framed)) == [.binary(payload)])
    }
}

@Test func unmaskedClientFramesAreRefused() {
    #expect(failure(WebSocketFrameWriter.text("hi"))?.code == .protocolError)
}

@Test func maskedServerFramesAreRefusedByAClient() throws {
    var parser = WebSocketParser(maxMessageBytes: 100, expectsMasked: false)
    parser.append(clientFrame(.text, [0x61]))
    #expect(throws: WebSocketFailure.self) { try parser.next() }
    var plain = WebSocketParser(maxMessageBytes: 100, expectsMasked: false)
    plain.append(WebSocketFrameWriter.text("ok"))
    #expect(try plain.next() == .text(Array("ok".utf8)))
}

@Test func framingViolationsCloseWithProtocolError() {
    var reserved = clientFrame(.text, [0x61])
    reserved[0] |= 0x40
    #expect(failure(reserved)?.code == .protocolError)
    var unknown = clientFrame(.text, [0x61])
    unknown[0] = 0x83
    #expect(failure(unknown)?.code == .protocolError)
    #expect(failure(clientFrame(.continuation, [0x61]))?.code == .protocolError)
    #expect(failure(clientFrame(.text, [0x61], fin: false) + clientFrame(.text, [0x62]))?.code == .protocolError)
    #expect(failure(clientFrame(.ping, [1], fin: false))?.code == .protocolError)
    #expect(failure(clientFrame(.ping, [UInt8](repeating: 0, count: 126)))?.code == .protocolError)
    #expect(failure(clientFrame(.close, [0x03]))?.code == .protocolError)
    #expect(failure(clientFrame(.close, [0x03, 0xED]))?.code == .protocolError)  // 1005 is never sent
    // A 5-byte payload announced with the 16-bit length form: not the shortest form.
    #expect(failure([0x81, 0xFE, 0x00, 0x05, 1, 2, 3, 4, 1, 2, 3, 4, 5])?.code == .protocolError)
    // A 64-bit length with its top bit set.
    #expect(failure([0x82, 0xFF, 0x80, 0, 0, 0, 0, 0, 0, 0])?.code == .protocolError)
}

@Test func invalidUTF8ClosesWith1007() {
    #expect(failure(clientFrame(.text, [0xC3, 0x28]))?.code == .invalidPayload)
    #expect(failure(clientFrame(.close, [0x03, 0xE8, 0xFF]))?.code == .invalidPayload)
}

@Test func oversizedMessagesAreRefusedFromTheHeaderAlone() {
    // Only the header of a 2 MiB frame arrives: refused before any payload is buffered.
    let header: [UInt8] = [0x82, 0xFF, 0, 0, 0, 0, 0, 0x20, 0, 0, 1, 2, 3, 4]
    #expect(failure(header, max: 1 << 20)?.code == .messageTooBig)
    // Fragments that add up to more than the bound.
    let half = [UInt8](repeating: 0x61, count: 600)
    #expect(failure(clientFrame(.text, half, fin: false) + clientFrame(.continuation, half), max: 1000)?.code == .messageTooBig)
    // Exactly the bound is accepted.
    #expect((try? events(clientFrame(.text, half + half), max: 1200)) == [.text(half + half)])
}

@Test func aFailedParserStaysFailedAndIgnoresInput() {
    var parser = WebSocketParser(maxMessageBytes: 100)
    parser.append(WebSocketFrameWriter.text("unmasked"))
    #expect(throws: WebSocketFailure.self) { try parser.next() }
    parser.append(clientFrame(.text, [0x61]))
    #expect(throws: WebSocketFailure.self) { try parser.next() }
    #expect(parser.bufferedBytes == 0)
}

@Test func nothingIsReadAfterAClose() throws {
    var parser = WebSocketParser(maxMessageBytes: 100)
    parser.append(clientFrame(.close, []) + clientFrame(.text, [0x61]))
    #expect(try parser.next() == .close(code: nil, reason: ""))
    #expect(try parser.next() == nil)
}

@Test func closeReasonsAreCutToFitAControlFrame() throws {
    let frame = WebSocketFrameWriter.close(.messageTooBig, reason: String(repeating: "é", count: 200))
    var parser = WebSocketParser(maxMessageBytes: 100, expectsMasked: false)
    parser.append(frame)
    guard case let .close(code, reason)? = try parser.next() else {
        Issue.record("no close frame")
        return
    }
    #expect(code == .messageTooBig)
    #expect(reason.utf8.count <= 123 && reason.allSatisfy { $0 == "é" })
}
