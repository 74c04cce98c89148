import Foundation
import Glibc
@testable import LocalAPI
import Store
import Testing
import Tree

/// Large reads are written while they are read: a GET or a stream's first `put` of a large
/// location keeps the node's memory bounded by a constant, and is the value of the moment the
/// request was answered.
@Suite("Local API: large reads", .serialized)
struct LargeReadTests {
    static let groups = 56
    static let perGroup = 90
    /// Items of 10 KB: few rows, so that filling the store stays quick, and about 50 MB in all.
    static func text(_ group: Int, _ item: Int) -> String {
        let head = "\(group)-\(item)-"
        return head + String(repeating: Character(UnicodeScalar(UInt8(97 + (group + item) % 26))), count: 10_000 - head.utf8.count)
    }

    static func groupKey(_ group: Int) -> String { String(format: "g%03d", group) }
    static func itemKey(_ item: Int) -> String { String(format: "k%03d", item) }

    /// The JSON text of one group as `/big` must read, the group's key and a comma before it
    /// (none before the first), and the closing brace after the last (keys and text are plain
    /// ASCII, so the text is written out here directly).
    static func expected(group: Int) -> [UInt8] {
        var text = (group == 0 ? "{" : ",") + "\"\(groupKey(group))\":{"
        for item in 0..<perGroup {
            text += (item == 0 ? "" : ",") + "\"\(itemKey(item))\":\"\(Self.text(group, item))\""
        }
        text += group == groups - 1 ? "}}" : "}"
        return Array(text.utf8)
    }

    /// Compares bytes as they arrive with the expected text, made a group at a time.
    struct ExpectedText {
        var group = 0
        var current = LargeReadTests.expected(group: 0)
        var offset = 0
        var matched = 0
        var mismatch = false

        mutating func check(_ piece: ArraySlice<UInt8>) {
            var piece = piece
            while !piece.isEmpty, !mismatch {
                if offset == current.count {
                    group += 1
                    guard group < LargeReadTests.groups else { mismatch = true; return }
                    current = LargeReadTests.expected(group: group)
                    offset = 0
                }
                let count = min(piece.count, current.count - offset)
                let equal = piece.withUnsafeBytes { received in
                    current.withUnsafeBytes { memcmp(received.baseAddress!, $0.baseAddress! + offset, count) == 0 }
                }
                if !equal { mismatch = true; return }
                offset += count
                matched += count
                piece = piece.dropFirst(count)
            }
        }

        var complete: Bool { !mismatch && group == LargeReadTests.groups - 1 && offset == current.count }
    }

    /// A chunked body read off a socket as it comes, handed to `body` a piece at a time,
    /// without keeping it.
    struct ChunkedReader {
        var buffer: [UInt8] = []
        var remaining = 0
        var headDone = false
        var ended = false
        var head = ""

        mutating func feed(_ bytes: ArraySlice<UInt8>, _ body: (ArraySlice<UInt8>) -> Void) {
            buffer += bytes
            while !ended {
                if !headDone {
                    guard let end = find([13, 10, 13, 10]) else { return }
                    head = String(decoding: buffer[..<end], as: UTF8.self)
                    buffer.removeSubrange(..<(end + 4))
                    headDone = true
                } else if remaining > 0 {
                    guard !buffer.isEmpty else { return }
                    let take = min(remaining, buffer.count)
                    body(buffer[..<take])
                    buffer.removeSubrange(..<take)
                    remaining -= take
                    if remaining == 0 { remaining = -1 }  // its CRLF is next
                } else if remaining == -1 {
                    guard buffer.count >= 2 else { return }
                    buffer.removeSubrange(..<2)
                    remaining = 0
                } else {
                    guard let end = find([13, 10]) else { return }
                    let size = Int(String(decoding: buffer[..<end], as: UTF8.self), radix: 16) ?? 0
                    buffer.removeSubrange(..<(end + 2))
                    if size == 0 { ended = true } else { remaining = size }
                }
            }
        }

        private func find(_ pattern: [UInt8]) -> Int? {
            guard buffer.count >= pattern.count else { return nil }
            for i in 0...(buffer.count - pattern.count) where buffer[i..<(i + pattern.count)].elementsEqual(pattern) { return i }
            return nil
        }
    }

    /// The anonymous resident memory of process `pid`, in bytes (nil when it cannot be read).
    static func anonymousMemory(of pid: Int32) -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        for line in status.split(separator: "\n") where line.hasPrefix("RssAnon:") {
            return (line.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0) * 1024
        }
        return nil
    }

    /// The `lanchat` executable built beside this test bundle.
    static var executable: String {
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("lanchat").path
    }

    static func runToEnd(_ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
    }

    @Test("a GET of a large location streams it, exactly, with the node's memory bounded by a constant")
    func largeGetStreams() throws {
        // A node of its own (the real executable), so that its memory is measured alone.
        try #require(FileManager.default.isExecutableFile(atPath: Self.executable), "no lanchat executable at \(Self.executable)")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("lanchat-large-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try Self.runToEnd(["init", "--data", directory + "/n", "--name", "Large"])
        let node = Process()
        node.executableURL = URL(fileURLWithPath: Self.executable)
        node.arguments = ["run", "--data", directory + "/n", "--no-discovery", "--listen", "127.0.0.1:0", "--api-token", APIFixture.token]
        node.standardError = FileHandle.nullDevice
        try node.run()
        defer {
            node.terminate()
            node.waitUntilExit()
        }
        var port: UInt16?
        let deadline = Date().addingTimeInterval(30)
        while port == nil, Date() < deadline {
            if let data = FileManager.default.contents(atPath: directory + "/n/node.json"),
               case let .string(api)? = (try? JSONValue.parse(String(decoding: data, as: UTF8.self)))?.objectValue?["api"],
               let last = api.split(separator: ":").last {
                port = UInt16(last)
            } else {
                Thread.sleep(forTimeInterval: 0.05)
            }
        }
        let apiPort = try #require(port, "the node did not start")
        let writer = try RawClient(port: apiPort)
        for group in 0..<Self.groups {
            var body = Self.expected(group: group)
            body.removeFirst((group == 0 ? "{" : ",").utf8.count + "\"\(Self.groupKey(group))\":".utf8.count)
            if group == Self.groups - 1 { body.removeLast() }
            try writer.send(RawClient.request("PUT", "/big/\(Self.groupKey(group)).json?print=silent", body: String(decoding: body, as: UTF8.self)))
            #expect(try writer.readResponse().status == 204)
        }

        let client = try RawClient(port: apiPort)
        let pid = node.processIdentifier
        let baseline = try #require(Self.anonymousMemory(of: pid))
        try client.send(RawClient.request("GET", "/big.json"))
        var reader = ChunkedReader()
        var expected = ExpectedText()
        var received = 0
        var peak = baseline
        var sinceSample = 0
        var scratch = [UInt8](repeating: 0, count: 1 << 16)
        while !reader.ended {
            let count = scratch.withUnsafeMutableBytes { recv(client.fd, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { break }
            reader.feed(scratch[..<count]) { piece in
                expected.check(piece)
                received += piece.count
            }
            sinceSample += count
            if sinceSample > 1 << 20 {
                sinceSample = 0
                peak = max(peak, Self.anonymousMemory(of: pid) ?? 0)
            }
        }
        let after = Self.anonymousMemory(of: pid) ?? 0
        #expect(reader.ended)
        #expect(reader.head.lowercased().contains("transfer-encoding: chunked"))
        #expect(expected.complete, "the body differs from the value after \(expected.matched) bytes")
        #expect(received > 50_000_000)
        // Reading the location whole holds it several times over (values, text, the response):
        // some 100 MB more here, and most of it stays. Streamed, a few pieces.
        let bound = 16 << 20
        #expect(peak - baseline < bound, "the node's anonymous memory rose by \((peak - baseline) >> 20) MB while \(received >> 20) MB were read")
        #expect(after - baseline < bound, "the node's anonymous memory stayed \((after - baseline) >> 20) MB above where it was")

        // The connection serves the next request as usual.
        try client.send(RawClient.request("GET", "/big/g000/k001.json"))
        #expect(try client.readResponse().json == .string(Self.text(0, 1)))
    }

    @Test("a streamed GET is the value when it was answered, carries the ETag asked for, and honours if-none-match")
    func streamedGetIsASnapshot() throws {
        let api = try APIFixture()
        defer { api.shutdown() }
        // Small items, many of them: large by rows, a few MB of JSON; with integer keys, an
        // array-like object and zones below.
        var members: [String: JSONValue] = [:]
        for i in 0..<3_000 { members[String(i)] = ["n": .number(Double(i)), "s": .string("é\(i)")] }
        members["list"] = .object(Dictionary(uniqueKeysWithValues: (0..<400).map { (String($0), JSONValue.number(Double($0))) }))
        _ = try api.node.write { store, key in try store.set(try Path("/s"), to: .object(members), signer: key, nowMillis: 1_700_000_000_000) }
        let uid = api.node.userID
        for i in 0..<300 {
            _ = try api.call("PUT", "/s/conversations/c/messages/m\(i).json", body: #"{"senderId":"\#(uid)","text":"t\#(i)"}"#)
        }
        let whole = try api.node.read { store in try store.value(at: try Path("/s")) }
        let client = try api.client()
        try client.send(RawClient.request("GET", "/s.json", headers: [("X-Firebase-ETag", "true")]))
        // A write after the request was answered is not in it.
        let (status, headers) = try client.readHead()
        _ = try api.call("PUT", "/s/0/n.json", body: "-1")
        let reply = try client.readBody(status: status, headers: headers)
        #expect(status == 200)
        #expect(reply.header("transfer-encoding") == "chunked")
        #expect(reply.body == Array(whole.serialized().utf8))
        #expect(reply.header("ETag") == firebaseETag(of: whole))
        let now = try api.node.read { store in try store.value(at: try Path("/s")) }
        try client.send(RawClient.request("GET", "/s.json", headers: [("if-none-match", firebaseETag(of: now))]))
        let unchanged = try client.readResponse()
        #expect(unchanged.status == 304)
        #expect(unchanged.header("ETag") == firebaseETag(of: now))
    }

    @Test("an event stream's large first put is streamed, and writes made meanwhile follow it")
    func largeFirstPut() throws {
        let api = try APIFixture()
        defer { api.shutdown() }
        var members: [String: JSONValue] = [:]
        for i in 0..<2_000 { members["k\(i)"] = ["n": .number(Double(i))] }
        _ = try api.node.write { store, key in try store.set(try Path("/w"), to: .object(members), signer: key, nowMillis: 1_700_000_000_000) }
        let whole = try api.node.read { store in try store.value(at: try Path("/w")) }
        let listener = try api.client()
        _ = try listener.openStream("/w.json")
        _ = try api.call("PUT", "/w/k5/n.json", body: "-5")
        let first = try listener.nextEvent()
        #expect(first.name == "put")
        #expect(first.data == JSONValue.object(["path": "/", "data": whole]).serialized())
        #expect(listener.streamChunks.count > 1, "the first put came in one piece")
        #expect(try listener.nextChange().json == ["path": "/k5/n", "data": -5])
    }

    /// About 10 MB in 5,000 rows at `/many`: more than a client that does not read, and the
    /// kernel's buffers, can take, so a read of it stays open while its client takes nothing.
    static func writeMany(_ api: APIFixture) throws {
        for group in 0..<10 {
            var members: [String: JSONValue] = [:]
            for item in 0..<500 { members[Self.itemKey(item)] = .string(String(repeating: "x", count: 2_000)) }
            _ = try api.node.write { store, key in
                try store.set(try Path("/many/" + Self.groupKey(group)), to: .object(members), signer: key, nowMillis: 1_700_000_000_000)
            }
        }
    }

    @Test("large reads open at once are bounded: beyond the limit a client gets 429, and a read that ends frees its place")
    func openReadsAreBounded() throws {
        let api = try APIFixture()
        defer { api.shutdown() }
        try Self.writeMany(api)
        // Reads of other tests in this process may hold a few places meanwhile.
        var idle: [RawClient] = []
        var refusedClient: RawClient?
        for _ in 0..<(StreamedRead.maxOpen + 4) {
            let client = try api.client(receiveBuffer: 4096)
            try client.send(RawClient.request("GET", "/many.json"))
            let (status, headers) = try client.readHead()
            if status == 429 {
                #expect(try client.readBody(status: status, headers: headers).json?.objectValue?["error"] != nil)
                refusedClient = client
                break
            }
            #expect(status == 200)
            idle.append(client)
        }
        #expect(idle.count <= StreamedRead.maxOpen && idle.count >= StreamedRead.maxOpen - 4)
        let refused = try #require(refusedClient, "no read was refused")
        // Small reads are not affected.
        try refused.send(RawClient.request("GET", "/many/g000/k000.json"))
        #expect(try refused.readResponse().status == 200)
        // Clients that go away free their reads.
        for client in idle { client.close() }
        let deadline = Date().addingTimeInterval(10)
        var status = 0
        while Date() < deadline {
            let again = try api.client()
            try again.send(RawClient.request("GET", "/many.json", headers: [("Connection", "close")]))
            status = try again.readHead().status
            if status == 200 { break }
            Thread.sleep(forTimeInterval: 0.05)
        }
        #expect(status == 200)
    }

    @Test("a client that takes nothing of a large read for the idle time is disconnected; one that pauses for less gets it whole")
    func stalledReadIsClosed() throws {
        let idle = 1.5
        let api = try APIFixture(idleTimeoutSeconds: idle)
        defer { api.shutdown() }
        try Self.writeMany(api)
        let whole = try api.node.read { store in try store.value(at: try Path("/many")) }.serialized()

        // Past the limit: the client reads the head, then takes nothing for twice the idle time
        // (that pause is what is tested). The node has closed it by then: what is left to read
        // ends before the body does.
        let stalled = try api.client(receiveBuffer: 4096)
        try stalled.send(RawClient.request("GET", "/many.json"))
        #expect(try stalled.readHead().status == 200)
        Thread.sleep(forTimeInterval: idle * 2)
        let rest = try stalled.readToEnd()
        #expect(rest.count < whole.utf8.count, "the stalled read was not closed")
        #expect(!rest.suffix(5).elementsEqual(Array("0\r\n\r\n".utf8)), "a closed read must not end as if complete")

        // At the limit's safe side: a client that pauses for a fifth of the idle time between
        // reads gets the body whole.
        let slow = try api.client(receiveBuffer: 4096)
        try slow.send(RawClient.request("GET", "/many.json", headers: [("Connection", "close")]))
        let (status, headers) = try slow.readHead()
        #expect(status == 200)
        for _ in 0..<3 {
            Thread.sleep(forTimeInterval: idle / 5)
            _ = try slow.fill()
        }
        #expect(try slow.readBody(status: status, headers: headers).text == whole)
    }
}
