import TestSupport
import Testing
import Tree
@testable import Realtime

/// Mutated requests and queries: each is refused with an error or taken, never a crash, and
/// a query that is taken answers a window no larger than its limit.
@Suite("Realtime protocol: hostile input")
struct RealtimeHostileInputTests {
    static let seeds = [
        #"{"t":"d","d":{"r":1,"a":"q","b":{"p":"/a","q":{"i":"ts","sp":3,"sn":"k","sin":false,"l":2,"vf":"r"},"t":1,"h":""}}}"#,
        #"{"t":"d","d":{"r":2,"a":"g","b":{"p":"/","q":{"i":".key","ep":"m3","ein":false}}}}"#,
        #"{"t":"d","d":{"r":3,"a":"m","b":{"p":"a/b","d":{"c/d":1,"e":null}}}}"#,
        #"{"t":"c","d":{"t":"p","d":{}}}"#,
    ]

    static let location: JSONValue = .object([
        "a": .object(["ts": .number(1)]), "b": .object(["ts": .number(3)]), "k": .object(["ts": .number(3)]),
        "m3": .string("x"), "10": .bool(true), "z": .object(["ts": .string("late")]),
    ])

    @Test func mutatedMessagesAreRefusedOrTaken() {
        var rng = SplitMix64(seed: 11)
        let alphabet = Array(#"{}[]":,0123456789-.eE tfnrulsaqpgbhivdkm/\"#.utf8)
        for _ in 0..<5000 {
            var bytes = Array(Self.seeds[Int(rng.next() % UInt64(Self.seeds.count))].utf8)
            for _ in 0..<(1 + Int(rng.next() % 3)) {
                let at = Int(rng.next() % UInt64(bytes.count))
                let byte = alphabet[Int(rng.next() % UInt64(alphabet.count))]
                if rng.chance(0.5) { bytes[at] = byte } else { bytes.insert(byte, at: at) }
            }
            guard case let .request(_, _, body)? = try? RealtimeMessage.parse(bytes, limits: JSONLimits()) else { continue }
            guard let query = try? RealtimeQuery(object: body["q"]) else { continue }
            let window = query.window(of: Self.location)
            if let limit = query.limit, case let .object(members) = window { #expect(members.count <= limit) }
            _ = query.storeQuery
        }
    }
}
