import Crypto
import Foundation
@testable import LocalAPI
import Testing
import Tree

@Suite("Local API: storage")
struct StorageTests {
    /// Enough of a PNG for the type sniffer: the signature and an IHDR chunk.
    static let png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13] + Array("IHDR".utf8) + [UInt8](repeating: 1, count: 17)

    static func upload(_ api: APIFixture, _ path: String, _ bytes: [UInt8]) throws -> HTTPReply {
        let client = try api.client()
        defer { client.close() }
        let name = path.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? path
        let head = "POST /v0/b/lanchat/o?name=\(name) HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(APIFixture.token)\r\n"
            + "Content-Type: image/png\r\nContent-Length: \(bytes.count)\r\n\r\n"
        try client.send(Array(head.utf8) + bytes)
        return try client.readResponse()
    }

    @Test func uploadsToTheUsersOwnPathsAndRefusesAnotherUsers() throws {
        let api = try APIFixture()
        defer { api.shutdown() }
        let own = "\(api.node.userID)/photo.png"
        let stored = try Self.upload(api, own, Self.png)
        #expect(stored.status == 200)
        #expect(stored.json?["contentType"] == "image/png")
        let encoded = own.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
        let media = try api.call("GET", "/v0/b/lanchat/o/\(encoded)?alt=media")
        #expect(media.status == 200 && media.body == Self.png)

        // A path that belongs to someone else: 403, and nothing stored under it.
        let other = PrivateKey().publicKey.userID
        for path in ["\(other)/photo.png", "images/\(other)_profile_picture.png"] {
            let refused = try Self.upload(api, path, Self.png)
            #expect(refused.status == 403, "\(path)")
            let encodedOther = path.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
            #expect(try api.call("GET", "/v0/b/lanchat/o/\(encodedOther)").status == 404)
        }
        // Paths nobody owns are everyone's.
        #expect(try Self.upload(api, "images/shared.png", Self.png).status == 200)
    }

    @Test("a photo uploaded for a message of a private conversation is stored sealed, its key set beside photoURL, and served opened")
    func privatePhotoUpload() throws {
        let api = try APIFixture()
        defer { api.shutdown() }
        let node = api.node
        let cid = try node.queue.sync {
            try node.withStoreOnQueue { store, key in
                try store.createGroup(title: "Trip", members: [PrivateKey().publicKey], sharesHistory: false, signer: key, nowMillis: node.wallMillis())
            }
        }
        // As a chat app does it: the message with photoURL "NOTSET", the upload under its key, then photoURL.
        let pushed = try api.call("POST", "/conversations/\(cid)/messages.json",
                                  body: "{\"senderId\":\"\(node.userID)\",\"photoURL\":\"NOTSET\"}")
        #expect(pushed.status == 200)
        let message = try #require(pushed.json?["name"]?.stringValue)
        let path = "images/\(node.userID)_\(message).png"
        let encoded = path.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
        let photo = Self.png + [UInt8](repeating: 7, count: 100_000)
        let stored = try Self.upload(api, path, photo)
        #expect(stored.status == 200)
        // The uploader's node opens it: the metadata are the image's, as uploaded.
        #expect(stored.json?["contentType"] == "image/png")
        #expect(stored.json?["size"] == .string(String(photo.count)))
        #expect(try api.call("PUT", "/conversations/\(cid)/messages/\(message)/photoURL.json", body: "\"gs://lanchat/\(path)\"").status == 200)
        let key = try api.call("GET", "/conversations/\(cid)/messages/\(message)/photoKey.json")
        #expect(key.json?.stringValue?.utf8.count == 43, "the file key is in the (sealed) message")
        let media = try api.call("GET", "/v0/b/lanchat/o/\(encoded)?alt=media")
        #expect(media.status == 200 && media.body == photo)
        #expect(media.header("content-type") == "image/png")
        let held = try node.queue.sync { try node.withStoreOnQueue { store, _ in try store.readFile(path) } }
        #expect(held != photo && held.count == photo.count + 2 * 16, "the store holds the sealed bytes only")
        let metadata = try api.call("GET", "/v0/b/lanchat/o/\(encoded)")
        #expect(metadata.json?["contentType"] == "image/png" && metadata.json?["size"] == .string(String(photo.count)))
        // A sealed file whose key no message here carries (as on a non-member's node): only
        // what every node knows of the sealed blob.
        let keyless = "images/\(node.userID)_keyless.png"
        _ = try node.queue.sync { try node.withStoreOnQueue { store, key in try store.putSealedFile(keyless, bytes: photo, signer: key, nowMillis: node.wallMillis()) } }
        let hidden = try api.call("GET", "/v0/b/lanchat/o/\(keyless.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)")
        #expect(hidden.json?["contentType"] == "application/x-lanchat-sealed")
        #expect(hidden.json?["size"] == .string(String(held.count)))
        // A public conversation's photo is stored as it is.
        #expect(try Self.upload(api, "images/\(node.userID)_public.png", Self.png).json?["contentType"] == "image/png")
    }

    @Test("a storage path and a data path in either Unicode spelling name one file and one key, shown in NFC")
    func eitherSpelling() throws {
        let api = try APIFixture()
        defer { api.shutdown() }
        let (nfc, nfd) = ("images/caf\u{E9}.png", "images/cafe\u{301}.png")
        let encode = { (path: String) in path.addingPercentEncoding(withAllowedCharacters: .alphanumerics)! }
        let stored = try Self.upload(api, nfc, Self.png)
        #expect(stored.status == 200)
        for path in [nfc, nfd] {
            let metadata = try api.call("GET", "/v0/b/lanchat/o/\(encode(path))")
            #expect(metadata.status == 200)
            #expect(metadata.json?["name"]?.stringValue.map { Array($0.utf8) } == Array(nfc.utf8))
            #expect(try api.call("GET", "/v0/b/lanchat/o/\(encode(path))?alt=media").body == Self.png)
        }
        let again = try Self.upload(api, nfd, Self.png)
        #expect(again.json?["name"]?.stringValue.map { Array($0.utf8) } == Array(nfc.utf8))
        #expect(try api.call("DELETE", "/v0/b/lanchat/o/\(encode(nfd))").status < 300)
        #expect(try api.call("GET", "/v0/b/lanchat/o/\(encode(nfc))").status == 404)

        // The REST tree: a PUT in either spelling is one key, shown in NFC.
        #expect(try api.call("PUT", "/k/\(encode("caf\u{E9}")).json", body: "\"first\"").status == 200)
        #expect(try api.call("PUT", "/k/\(encode("cafe\u{301}")).json", body: "\"second\"").status == 200)
        let k = try api.call("GET", "/k.json")
        #expect(k.body == Array("{\"caf\u{E9}\":\"second\"}".utf8))
        let shallow = try api.call("GET", "/k.json?shallow=true")
        #expect(shallow.body == Array("{\"caf\u{E9}\":true}".utf8))
    }
}
