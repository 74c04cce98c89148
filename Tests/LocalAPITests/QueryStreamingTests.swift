import Foundation
@testable import LocalAPI
import Testing
import Tree

/// Event streams opened with query parameters: the listener sees the query's window of the
/// location and only the changes inside it (the live last page of a chat).
@Suite("Local API: streams of query windows")
struct QueryStreamingTests {
    static func message(_ uid: String, _ text: String, date: Int) -> String {
        #"{"senderId":"\#(uid)","text":"\#(text)","date":\#(date)}"#
    }

    static func messageValue(_ uid: String, _ text: String, date: Int) -> JSONValue {
        ["senderId": .string(uid), "text": .string(text), "date": .number(Double(date))]
    }

    @Test("limitToLast by key: a write inside the window is sent, one outside is not, and a new message pushes the oldest out")
    func lastPageByKey() throws {
        let api = try APIFixture()
        defer { api.shutdown() }
        let uid = api.node.userID
        for (index, key) in ["m1", "m2", "m3", "m4"].enumerated() {
            _ = try api.call("PUT", "/conversations/c/messages/\(key).json", body: Self.message(uid, "t\(index)", date: index))
        }
        let listener = try api.client()
        let head = try listener.openStream("/conversations/c/messages.json?orderBy=%22$key%22&limitToLast=2")
        #expect(head.status == 200)
        #expect(try listener.nextEvent().json == ["path": "/", "data": [
            "m3": Self.messageValue(uid, "t2", date: 2), "m4": Self.messageValue(uid, "t3", date: 3)]])

        // Outside the window: nothing. Inside: the message whole, at its key.
        _ = try api.call("PUT", "/conversations/c/messages/m1/text.json", body: #""edited""#)
        _ = try api.call("PUT", "/conversations/c/messages/m4/text.json", body: #""edited""#)
        #expect(try listener.nextChange().json == ["path": "/m4", "data": Self.messageValue(uid, "edited", date: 3)])

        // A new last message enters and the oldest of the window leaves, in one event.
        _ = try api.call("PUT", "/conversations/c/messages/m5.json", body: Self.message(uid, "t4", date: 4))
        #expect(try listener.nextChange().json == ["path": "/", "data": ["m5": Self.messageValue(uid, "t4", date: 4), "m3": nil]])

        // A message deleted from the window lets the one before it back in.
        _ = try api.call("DELETE", "/conversations/c/messages/m5.json")
        #expect(try listener.nextChange().json == ["path": "/", "data": ["m5": nil, "m3": Self.messageValue(uid, "t2", date: 2)]])
        // Its event name says how to apply it: a patch replaces each named child.
        _ = try api.call("PUT", "/conversations/c/messages/m6.json", body: Self.message(uid, "t6", date: 6))
        let patch = try listener.nextChange()
        #expect(patch.name == "patch")
        #expect(patch.json == ["path": "/", "data": ["m6": Self.messageValue(uid, "t6", date: 6), "m3": nil]])
    }

    @Test("orderBy a child with a range: only children whose value is in range are sent")
    func rangeByChild() throws {
        let api = try APIFixture()
        defer { api.shutdown() }
        let uid = api.node.userID
        let listener = try api.client()
        _ = try listener.openStream("/conversations/r/messages.json?orderBy=%22date%22&startAt=10&endAt=20")
        #expect(try listener.nextEvent().json == ["path": "/", "data": nil])
        // The first child in range makes the window an object: sent whole.
        _ = try api.call("PUT", "/conversations/r/messages/a.json", body: Self.message(uid, "in", date: 15))
        #expect(try listener.nextChange().json == ["path": "/", "data": ["a": Self.messageValue(uid, "in", date: 15)]])
        _ = try api.call("PUT", "/conversations/r/messages/b.json", body: Self.message(uid, "out", date: 30))
        _ = try api.call("PUT", "/conversations/r/messages/c.json", body: Self.message(uid, "in too", date: 10))
        #expect(try listener.nextChange().json == ["path": "/c", "data": Self.messageValue(uid, "in too", date: 10)])
        // A child moved out of range by an edit leaves the window.
        _ = try api.call("PUT", "/conversations/r/messages/a/date.json", body: "99")
        #expect(try listener.nextChange().json == ["path": "/a", "data": nil])
        // And one moved into range enters it.
        _ = try api.call("PUT", "/conversations/r/messages/b/date.json", body: "20")
        #expect(try listener.nextChange().json == ["path": "/b", "data": Self.messageValue(uid, "out", date: 20)])
    }

    @Test("a query window on a location of the open zone, and a write above it")
    func openZoneWindow() throws {
        let api = try APIFixture()
        defer { api.shutdown() }
        _ = try api.call("PUT", "/scores.json", body: #"{"ann":3,"bob":7,"cy":5}"#)
        let listener = try api.client()
        _ = try listener.openStream("/scores.json?orderBy=%22$value%22&limitToFirst=2")
        #expect(try listener.nextEvent().json == ["path": "/", "data": ["ann": 3, "cy": 5]])
        _ = try api.call("PUT", "/scores/bob.json", body: "8")
        _ = try api.call("PUT", "/scores/ann.json", body: "4")
        #expect(try listener.nextChange().json == ["path": "/ann", "data": 4])
        _ = try api.call("PUT", "/scores/dee.json", body: "1")
        #expect(try listener.nextChange().json == ["path": "/", "data": ["dee": 1, "cy": nil]])
        // A write at the location itself: the window whole.
        _ = try api.call("PUT", "/scores.json", body: #"{"x":2,"y":1,"z":0}"#)
        #expect(try listener.nextChange().json == ["path": "/", "data": ["y": 1, "z": 0]])
    }

    @Test("a stream with a bad query is refused like a GET")
    func badQuery() throws {
        let api = try APIFixture()
        defer { api.shutdown() }
        let listener = try api.client()
        try listener.send(RawClient.request("GET", "/a.json?limitToLast=2", headers: [("Accept", "text/event-stream")]))
        let reply = try listener.readResponse()
        #expect(reply.status == 400)
        #expect(reply.json == ["error": "orderBy must be defined when other query parameters are defined"])
    }
}
