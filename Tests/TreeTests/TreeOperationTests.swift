import Testing
import Tree
import TestSupport

@Suite("Tree operations")
struct TreeOperationTests {
    let a = try! Path("/a")

    @Test func readsValues() throws {
        let root = try tree(#"{"a":{"b":1,"c":{"d":"x"}},"e":true}"#)
        #expect(root.value(at: .root) == root)
        #expect(root.value(at: try Path("/a/c/d")) == "x")
        #expect(root.value(at: try Path("/a/c")) == ["d": "x"])
        #expect(root.value(at: try Path("/a/zz")) == .null)
        #expect(root.value(at: try Path("/a/b/below")) == .null, "below a primitive")
        #expect(root.value(at: try Path("/e/x/y")) == .null)
        #expect(JSONValue.null.value(at: a) == .null)
    }

    @Test func setsAndUpdatesLikeFirebase() throws {
        let value = try tree(#"{"b":1,"c":{"d":2}}"#)
        let root = JSONValue.null.setting(a, to: value)
        #expect(root == ["a": ["b": 1, "c": ["d": 2]]])

        // Relative children, as `updating(at:with:)` takes them.
        let updated = root.updating(at: a, with: [(try Path("c/d"), 3), (try Path("e"), .null)])
        #expect(updated.value(at: a) == ["b": 1, "c": ["d": 3]])
        #expect(updated.serialized() == #"{"a":{"b":1,"c":{"d":3}}}"#)

        // The same through validated absolute pairs.
        let pairs = try UpdateBatch.validateUpdate(at: a, JSONValue.parse(#"{"c/d":3,"e":null}"#))
        #expect(root.settingAll(pairs) == updated)
    }

    @Test func updateReplacesChildrenWithoutDeepMerge() throws {
        let root = try tree(#"{"a":{"c":{"d":2,"f":4},"g":5}}"#)
        let updated = root.updating(at: a, with: [(try Path("c"), ["x": 1])])
        #expect(updated == ["a": ["c": ["x": 1], "g": 5]])
    }

    @Test func replacesSubtrees() throws {
        let root = try tree(#"{"a":{"b":{"c":1,"d":2}},"z":0}"#)
        #expect(root.setting(try Path("/a/b"), to: "s") == ["a": ["b": "s"], "z": 0])
        #expect(root.setting(.root, to: 5) == 5)
        #expect(root.setting(.root, to: .null) == .null)
        #expect(root.setting(try Path("/a/b/c"), to: ["n": true]) == ["a": ["b": ["c": ["n": true], "d": 2]], "z": 0])
        // An empty object is treated as null rather than stored.
        #expect(root.setting(try Path("/z"), to: .object([:])) == ["a": ["b": ["c": 1, "d": 2]]])
    }

    @Test func deletingTheLastChildRemovesParents() throws {
        let root = try tree(#"{"a":{"b":{"c":1}},"keep":1}"#)
        #expect(root.setting(try Path("/a/b/c"), to: .null) == ["keep": 1])
        #expect(root.setting(try Path("/keep"), to: .null).setting(try Path("/a/b/c"), to: .null) == .null)
        let two = try tree(#"{"a":{"b":{"c":1,"d":2}}}"#)
        #expect(two.setting(try Path("/a/b/c"), to: .null) == ["a": ["b": ["d": 2]]])
        #expect(two.updating(at: try Path("/a/b"), with: [(try Path("c"), .null), (try Path("d"), .null)]) == .null)
    }

    @Test func writesBelowPrimitives() throws {
        let root = try tree(#"{"a":5}"#)
        #expect(root.setting(try Path("/a/b/c"), to: 1) == ["a": ["b": ["c": 1]]])
        #expect(root.setting(try Path("/a/b"), to: .null) == root, "null below a primitive changes nothing")
        #expect(root.setting(try Path("/x/y"), to: .null) == root, "null below nothing changes nothing")
        #expect(JSONValue.string("top").setting(try Path("/k"), to: "v") == ["k": "v"])
        #expect(JSONValue.null.setting(try Path("/p/q"), to: .null) == .null)
    }

    @Test func agreesWithAnIndependentLeafModel() throws {
        // Model the tree as a map from leaf path to primitive and compare after
        // many random writes: a second, simpler implementation of the semantics.
        var rng = SplitMix64(seed: 2024)
        let keys = ["a", "b", "c"]
        var root = JSONValue.null
        var leaves: [Path: JSONValue] = [:]
        for step in 0..<3000 {
            let depth = Int.random(in: 0...3, using: &rng)
            let path = try Path(segments: (0..<depth).map { _ in keys.randomElement(using: &rng)! })
            let value: JSONValue
            switch Int.random(in: 0...3, using: &rng) {
            case 0: value = .null
            case 1: value = .number(Double(step))
            case 2: value = try JSONValue.object([keys.randomElement(using: &rng)!: .bool(true)]).normalized()
            default: value = ["a": ["b": .number(Double(step))], "c": "s"]
            }
            root = root.setting(path, to: value)
            // Leaf model: drop everything at or below the path...
            leaves = leaves.filter { !path.isAncestorOrSelf(of: $0.key) }
            // ...and, for a non-null write, any primitive on an ancestor...
            if !value.isNull {
                for ancestor in path.ancestors { leaves[ancestor] = nil }
                func addLeaves(_ node: JSONValue, at nodePath: Path) throws {
                    if case .object(let members) = node {
                        for (key, child) in members { try addLeaves(child, at: nodePath.appending(key)) }
                    } else {
                        leaves[nodePath] = node
                    }
                }
                try addLeaves(value, at: path)
            }
            // ...then rebuild a tree from the leaves and compare.
            var rebuilt = JSONValue.null
            for (leafPath, leaf) in leaves { rebuilt = rebuilt.setting(leafPath, to: leaf) }
            #expect(rebuilt == root, "step \(step)")
            if rebuilt != root { break }
        }
    }
}
