import Testing
import Tree
@testable import Store

/// How a path is spelled in the store's tables (`StoreKey`): each segment after U+0001, so a
/// subtree is one range of keys and children sort bytewise.
@Suite("Store keys")
struct StoreKeyTests {
    @Test("a key is each segment after U+0001, in any script, and reads back as the same path")
    func spelling() throws {
        let samples: [[String]] = [
            [], ["a"], ["conversations", "c1", "messages", "-Nx0aZ_9kQ"], ["users", "héllo", "名前"],
            ["emoji 👩‍👩‍👧", "ключ", "مفتاح", String(repeating: "x", count: 700)],
        ]
        for segments in samples {
            let path = try Path(segments: segments)
            let key = StoreKey.of(path)
            #expect(Array(key.utf8) == segments.flatMap { [UInt8(1)] + Array($0.utf8) })
            #expect(try StoreKey.path(key) == path)
            #expect(StoreKey.parentKey(of: key) == path.parent.map(StoreKey.of))
        }
        #expect(StoreKey.of(Path.root) == "")
    }

    @Test("keys of a subtree fall in its range, and siblings sort as their keys do bytewise")
    func ordering() throws {
        let parent = try Path(segments: ["conversations", "c1"])
        let (low, high) = StoreKey.descendants(StoreKey.of(parent))
        for child in ["a", "a!", "b", "é", "中"] {
            let key = StoreKey.of(try Path(segments: ["conversations", "c1", child]))
            #expect(key >= low && key < high)
        }
        #expect(StoreKey.of(try Path(segments: ["conversations", "c1!"])) >= high)
        let a = StoreKey.of(try Path(segments: ["x", "a"])), b = StoreKey.of(try Path(segments: ["x", "a", "b"]))
        let c = StoreKey.of(try Path(segments: ["x", "a!"]))
        #expect(Array(a.utf8).lexicographicallyPrecedes(Array(b.utf8)) && Array(b.utf8).lexicographicallyPrecedes(Array(c.utf8)))
    }
}
