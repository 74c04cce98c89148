import Testing
import Tree

@Suite("Shallow reads and ETags")
struct ShallowAndETagTests {
    @Test func shallowCutsChildrenToTrue() throws {
        let message = try tree(#"{"user":{"name":"Chris"},"body":"Hello!"}"#)
        #expect(shallow(message) == ["user": true, "body": true])
        #expect(shallow(message).serialized() == #"{"body":true,"user":true}"#)
        #expect(shallow("Hello!") == "Hello!")
        #expect(shallow(42) == 42)
        #expect(shallow(false) == false)
        #expect(shallow(.null) == .null)
        #expect(shallow(.array([1, .null, ["a": 1]])) == ["0": true, "2": true])
    }

    @Test func etagIsDeterministicAndContentBased() throws {
        let a = try tree(#"{"b":1,"a":{"x":"y"}}"#)
        let sameContent = try tree(#"{"a":{"x":"y"},"b":1}"#)
        #expect(firebaseETag(of: a) == firebaseETag(of: sameContent))
        #expect(firebaseETag(of: a) != firebaseETag(of: try tree(#"{"b":2,"a":{"x":"y"}}"#)))
        #expect(firebaseETag(of: "1") != firebaseETag(of: 1))
        let tag = firebaseETag(of: a)
        #expect(tag.utf8.count == 16)
        #expect(tag.utf8.allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains($0) })
    }

    @Test func etagIsFNV1aOfTheCanonicalJSON() {
        // Reference values from an independent FNV-1a 64 implementation (which gives the
        // published af63dc4c8601ec8c for the text "a").
        #expect(firebaseETag(of: 1) == "af63ac4c86019afc", "FNV-1a 64 of the text 1")
        #expect(firebaseETag(of: "") == "07cc7607b4949e25", "FNV-1a 64 of the text \"\"")
    }

    @Test func absentValuesHaveTheNullETag() {
        #expect(firebaseETag(of: .null) == "null_etag")
        #expect(firebaseETag(of: .object([:])) == "null_etag")
        #expect(firebaseETag(of: false) != "null_etag")
        #expect(firebaseETag(of: "null") != "null_etag", "the string \"null\" is something there")
    }

    @Test("the ETag of a reply's serialized body is the value's, given whole or in pieces")
    func etagOfSerializedText() throws {
        let values: [JSONValue] = [.null, .object([:]), "null", "nul", 1, try tree(#"{"a":{"b":"x\"y"},"c":[1,2]}"#)]
        for value in values {
            let json = value.serialized()
            #expect(firebaseETag(ofJSON: json) == firebaseETag(of: value), "\(json)")
            // A read written as it is read writes nothing there as null, never as {}.
            guard json != "{}" else { continue }
            var pieces = FirebaseETagHasher()
            for byte in json.utf8 { pieces.update([byte]) }
            #expect(pieces.etag == firebaseETag(of: value), "\(json) a byte at a time")
        }
    }
}
