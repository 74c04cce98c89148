import Crypto
import Testing
import Tree
@testable import Wire

private let nfcCafe = "caf\u{E9}"
private let nfdCafe = "cafe\u{301}"

/// A signed record of `kind` with `body` as given, spelled exactly as written.
private func signedRecord(kind: UInt64 = 1, body: CBOR, clock: UInt64 = 5) throws -> [UInt8] {
    let fields: [CBOR] = [.unsigned(1), .unsigned(kind), .bytes(alice.publicKey.bytes), .unsigned(clock), body]
    let signature = try alice.sign(Record.signingDomain + CBOR.array(fields).encoded())
    return CBOR.array(fields + [.bytes(signature.bytes)]).encoded()
}

private func pair(_ path: String, _ value: CBOR) -> CBOR { .array([.text(path), value]) }

private func error(_ bytes: [UInt8]) -> RecordError? {
    do { _ = try Record.decode(bytes); return nil } catch { return error }
}

/// Records may spell keys otherwise than in NFC; they keep their bytes and are read in NFC.
@Suite("Records and key spellings")
struct CanonicalRecordTests {
    @Test("a record's paths and object keys are read in NFC; its bytes, id and signature stay as signed")
    func readInNFC() throws {
        let value = CBOR.map([CBORPair(.text("e\u{301}"), .unsigned(1)), CBORPair(.text("x"), .map([CBORPair(.text(nfdCafe), .bool(true))]))])
        let bytes = try signedRecord(body: .array([pair("/k/\(nfdCafe)", value)]))
        let record = try Record.decode(bytes)
        #expect(record.encoded == bytes && record.id == BLAKE2b.digest256(bytes) && record.verifySignature())
        guard case let .write(pairs) = record.body, let first = pairs.first else {
            Issue.record("not a write")
            return
        }
        #expect(first.path.storageKey.utf8.elementsEqual("/k/\(nfcCafe)".utf8))
        guard case let .object(members) = first.value, case let .object(inner)? = members["x"] else {
            Issue.record("not an object")
            return
        }
        #expect(members.keys.contains { $0.utf8.elementsEqual("\u{E9}".utf8) })
        #expect(inner.keys.allSatisfy { $0.utf8.elementsEqual(nfcCafe.utf8) })
        // The zone store's value bytes are the NFC value's encoding, not the bytes as written.
        #expect(record.valuesRespelled)
        #expect(record.pairValueEncodings.map(Array.init) == [TreeValueCodec.encode(first.value).encoded()])
        // A record in NFC is sliced as before.
        let plain = try Record.decode(try signedRecord(body: .array([pair("/k/\(nfcCafe)", .map([CBORPair(.text(nfcCafe), .unsigned(1))]))])))
        #expect(!plain.valuesRespelled)
    }

    @Test("an opened sealed write's value bytes are each value's encoding, sliced or, where respelled, encoded in NFC")
    func sealedPlaintextValueBytes() throws {
        let many = CBOR.array([
            pair("/conversations/g/messages/a", .map([CBORPair(.text("text"), .text("hi")), CBORPair(.text("n"), .unsigned(300))])),
            pair("/conversations/g/messages/b", .map([CBORPair(.text("a"), .unsigned(1)), CBORPair(.text("z"), .map([CBORPair(.text(nfcCafe), .bool(false))]))])),
            pair("/conversations/g/messages/c", .text("x")),
        ]).encoded()
        let (pairs, valueBytes) = try PrivateBodies.decodeWriteAndValueBytes(many)
        #expect(pairs == (try PrivateBodies.decodeWrite(many)) && pairs.count == 3)
        #expect(valueBytes.map(Array.init) == pairs.map { TreeValueCodec.encode($0.value).encoded() })
        // Sliced from the plaintext: nothing encoded again.
        #expect(valueBytes.allSatisfy { many.indices.contains($0.startIndex) && many[$0.startIndex..<$0.endIndex] == $0 })

        let spelled = CBOR.array([pair("/conversations/g/messages/a", .map([CBORPair(.text(nfdCafe), .unsigned(1))]))]).encoded()
        let (respelled, respelledBytes) = try PrivateBodies.decodeWriteAndValueBytes(spelled)
        #expect(respelledBytes.map(Array.init) == [TreeValueCodec.encode(respelled[0].value).encoded()])
        #expect(!String(decoding: Array(respelledBytes[0]), as: UTF8.self).unicodeScalars.contains("\u{301}"))
    }

    @Test("two object keys that are canonically equivalent are refused")
    func equivalentObjectKeys() throws {
        let value = CBOR.map([CBORPair(.text(nfcCafe), .unsigned(1)), CBORPair(.text(nfdCafe), .unsigned(2))])
        let refused = error(try signedRecord(body: .array([pair("/k", value)])))
        guard case let .invalidValue(_, reason)? = refused else {
            Issue.record("refused as \(String(describing: refused))")
            return
        }
        #expect(reason == "two keys are canonically equivalent")
        // Also deeper down, and with the spellings the other way round.
        let nested = CBOR.map([CBORPair(.text("a"), .map([CBORPair(.text("e\u{301}"), .unsigned(1)), CBORPair(.text("\u{E9}"), .unsigned(2))]))])
        guard case .invalidValue? = error(try signedRecord(body: .array([pair("/k", nested)]))) else {
            Issue.record("nested equivalent keys accepted")
            return
        }
    }

    @Test("two paths of one write that are equal or nested in NFC make an invalid body")
    func pathsMeetingInNFC() throws {
        let same = error(try signedRecord(body: .array([pair("/k/\(nfdCafe)", .unsigned(1)), pair("/k/\(nfcCafe)", .unsigned(2))])))
        guard case let .invalidBody(reason)? = same else {
            Issue.record("equal paths refused as \(String(describing: same))")
            return
        }
        #expect(reason.contains("NFC"))
        let nested = error(try signedRecord(body: .array([pair("/k/\(nfdCafe)", .unsigned(1)), pair("/k/\(nfcCafe)/x", .unsigned(2))])))
        guard case .invalidBody? = nested else {
            Issue.record("nested paths refused as \(String(describing: nested))")
            return
        }
    }

    @Test("the order rule applies to the paths as written, which NFC may sort otherwise")
    func orderAsWritten() throws {
        // As written "/e\u{301}" (65 cc 81) sorts before "/f"; in NFC "/\u{E9}" (c3 a9) sorts after it.
        let bytes = try signedRecord(body: .array([pair("/e\u{301}", .unsigned(1)), pair("/f", .unsigned(2))]))
        let record = try Record.decode(bytes)
        guard case let .write(pairs) = record.body else { Issue.record("not a write"); return }
        #expect(pairs.map { Array($0.path.storageKey.utf8) } == [Array("/\u{E9}".utf8), Array("/f".utf8)])
        // The NFC spelling in that order is out of order as written.
        let swapped = error(try signedRecord(body: .array([pair("/\u{E9}", .unsigned(1)), pair("/f", .unsigned(2))])))
        guard case .invalidBody? = swapped else { Issue.record("accepted \(String(describing: swapped))"); return }
    }

    @Test("new records are written in NFC, whatever spelling they were given")
    func madeInNFC() throws {
        let value = JSONValue.object([nfdCafe: .object(["e\u{301}": .number(1)])])
        let record = try Record.make(body: .write([WritePair(path: try Path("/k/\(nfdCafe)"), value: value)]), clock: 1 << 16, signer: alice)
        let text = String(decoding: record.encoded, as: UTF8.self)
        #expect(!text.unicodeScalars.contains("\u{301}"))
        #expect(try Record.decode(record.encoded) == record)
        let file = try Record.make(body: .file(FileEntry(path: "images/\(nfdCafe).png", manifest: nil)), clock: 2 << 16, signer: alice)
        #expect(file.body == .file(FileEntry(path: "images/\(nfcCafe).png", manifest: nil)))
        guard case let .file(entry) = file.body else { Issue.record("not a file"); return }
        #expect(entry.path.utf8.elementsEqual("images/\(nfcCafe).png".utf8))
        #expect(!String(decoding: file.encoded, as: UTF8.self).unicodeScalars.contains("\u{301}"))
    }

    @Test("a file entry's storage path is read in NFC")
    func filePath() throws {
        let bytes = try signedRecord(kind: 3, body: .array([.text("images/\(nfdCafe).png"), .null]))
        let record = try Record.decode(bytes)
        guard case let .file(entry) = record.body else { Issue.record("not a file"); return }
        #expect(entry.path.utf8.elementsEqual("images/\(nfcCafe).png".utf8))
        #expect(record.encoded == bytes)
    }
}
