import Testing
import Tree

/// A query's window with the live layer over it (`LivePaths.overlay(window:of:at:entries:)`):
/// the same as the query run on the tree a plain read shows, without reading the location.
@Suite("Live values over a query's window")
struct LiveWindowTests {
    static let conversation: JSONValue = [
        "messages": ["m1": ["text": "a"], "m2": ["text": "b"]],
        "title": "t",
    ]
    static let entries: [(Path, JSONValue)] = [
        (try! Path("/conversations/c/typingIndicator/u1"), true),
        (try! Path("/conversations/c/readReceipts/u1"), "m2"),
        (try! Path("/conversations/d/typingIndicator/u2"), true),
    ]

    func query(_ params: [(String, String)]) throws -> FirebaseQuery { try #require(try FirebaseQuery.parse(params)) }

    /// The reference: the query run on the whole location with the live layer over it.
    func reference(_ query: FirebaseQuery, _ stored: JSONValue, at path: Path) -> JSONValue {
        query.apply(to: LivePaths.overlay(stored, at: path, entries: Self.entries))
    }

    @Test("by key, first or last: a wholly live child enters the window as it would in the whole location")
    func byKey() throws {
        let path = try Path("/conversations/c")
        for params in [[("orderBy", "\"$key\""), ("limitToLast", "1")], [("orderBy", "\"$key\""), ("limitToLast", "2")],
                       [("orderBy", "\"$key\""), ("limitToFirst", "1")], [("orderBy", "\"$key\""), ("startAt", "\"r\"")]] {
            let q = try query(params)
            let window = q.apply(to: Self.conversation)
            #expect(LivePaths.overlay(window: window, of: q, at: path, entries: Self.entries) == reference(q, Self.conversation, at: path),
                    "\(params)")
        }
        let last = try query([("orderBy", "\"$key\""), ("limitToLast", "1")])
        #expect(LivePaths.overlay(window: last.apply(to: Self.conversation), of: last, at: path, entries: Self.entries)
                == ["typingIndicator": ["u1": true]])
    }

    @Test("children in the window get their live values; one outside does not enter for a live value below it")
    func children() throws {
        let path = try Path("/conversations")
        let stored: JSONValue = ["c": Self.conversation, "d": ["messages": ["m1": ["text": "z"]], "rank": 1], "e": ["rank": 2]]
        let q = try query([("orderBy", "\"rank\""), ("limitToFirst", "1")])
        let window = q.apply(to: stored)
        // c has no rank: it orders first and is the window; d's typing flag does not bring d in.
        let shown = LivePaths.overlay(window: window, of: q, at: path, entries: Self.entries)
        #expect(shown == reference(q, stored, at: path))
        #expect(shown.objectValue.map { Array($0.keys) } == ["c"])
        #expect(shown.objectValue?["c"]?.objectValue?["typingIndicator"] == ["u1": true])
        // A record's value inside a live subtree is hidden in a window too.
        let forged: JSONValue = ["typingIndicator": ["u9": true], "title": "t"]
        let all = try query([("orderBy", "\"$key\"")])
        #expect(LivePaths.overlay(window: all.apply(to: forged), of: all, at: try Path("/conversations/x"), entries: Self.entries)
                == ["title": "t"])
    }
}
