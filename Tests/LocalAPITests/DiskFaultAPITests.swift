import DiskFaults
import Foundation
import Store
import Testing
import Tree

/// The local API of a real node whose store sits on a failing disk (`FaultDisk`): a write that
/// cannot be stored gets a clear non-2xx answer, the node goes on serving reads, and writes work
/// again once the disk does, without a restart.
@Suite("Local API on a failing disk", .serialized)
struct DiskFaultAPITests {
    @Test("a PUT or POST onto a full disk gets 507 and \"disk full\" with the file; reads go on; writes work again once there is space")
    func fullDisk() throws {
        try FaultDisk.exclusive { disk in
            let fixture = try APIFixture(disk: disk.access)
            defer { fixture.shutdown() }
            #expect(try fixture.call("PUT", "/rooms/a.json", body: "{\"n\":1}").status == 200)

            disk.arm(.diskFull, on: [.wal, .mainDB], sticky: true)
            let put = try fixture.call("PUT", "/rooms/a.json", body: "{\"n\":2}")
            // 507, not 500: firebase-admin retries 500 and 503 by itself, and no retry can succeed
            // until space is freed.
            #expect(put.status == 507, "\(put)")
            let message = put.json?.objectValue?["error"]?.stringValue ?? ""
            #expect(message.hasPrefix("disk full: could not write \(fixture.directory)/store.sqlite"), "\(put)")
            let post = try fixture.call("POST", "/rooms/a/log.json", body: "\"entry\"")
            #expect(post.status == 507, "\(post)")
            let patch = try fixture.call("PATCH", "/rooms/a.json", body: "{\"m\":1}")
            #expect(patch.status == 507, "\(patch)")
            #expect(disk.fired)

            // Reads are served all along, and show only what was acknowledged.
            let read = try fixture.call("GET", "/rooms/a.json")
            #expect(read.status == 200)
            #expect(read.json == .object(["n": .number(1)]))

            disk.disarm()
            #expect(try fixture.call("PUT", "/rooms/a.json", body: "{\"n\":3}").status == 200)
            #expect(try fixture.call("GET", "/rooms/a.json").json == .object(["n": .number(3)]))
            let check = try fixture.node.read { try $0.integrityCheck() }
            #expect(check == ["ok"])
        }
    }

    @Test("an upload onto a full pack gets 507; an I/O error on the database or the pack gets 500 naming the file; all recover")
    func uploadAndIOError() throws {
        try FaultDisk.exclusive { disk in
            let fixture = try APIFixture(disk: disk.access)
            defer { fixture.shutdown() }
            // GIF's signature, then filler: two chunks.
            let image = "GIF89a" + String(repeating: "g", count: 100_000)
            let target = "/v0/b/bucket/o?name=shared/pic.gif"
            let headers = [("Content-Type", "image/gif")]

            disk.arm(.diskFull, on: .pack, sticky: true)
            let full = try fixture.call("POST", target, headers: headers, body: image)
            #expect(full.status == 507, "\(full)")
            #expect(full.json?.objectValue?["error"]?.stringValue == "disk full: could not write \(fixture.directory)/store.chunks.pack; free some space and try again")
            disk.disarm()
            #expect(try fixture.call("POST", target, headers: headers, body: image).status == 200)

            disk.arm(.writeError, on: .wal, sticky: true)
            let failed = try fixture.call("PUT", "/x.json", body: "1")
            #expect(failed.status == 500, "\(failed)")
            #expect(failed.json?.objectValue?["error"]?.stringValue?.hasPrefix("disk error on \(fixture.directory)/store.sqlite") == true, "\(failed)")
            #expect(try fixture.call("GET", "/x.json").json == .null)
            disk.disarm()
            #expect(try fixture.call("PUT", "/x.json", body: "1").status == 200)

            // The pack cannot be read: the download fails naming it, the tree is still served.
            disk.arm(.readError, on: .pack, sticky: true)
            let unreadable = try fixture.call("GET", "/v0/b/bucket/o/shared%2Fpic.gif?alt=media")
            #expect(unreadable.status == 500, "\(unreadable)")
            #expect(unreadable.json?.objectValue?["error"]?.stringValue == "disk error on \(fixture.directory)/store.chunks.pack: read: Input/output error", "\(unreadable)")
            #expect(try fixture.call("GET", "/x.json").json == .number(1))
            disk.disarm()
            let media = try fixture.call("GET", "/v0/b/bucket/o/shared%2Fpic.gif?alt=media")
            #expect(media.status == 200 && media.body == Array(image.utf8))
            #expect(try fixture.node.read { try $0.integrityCheck() } == ["ok"])
        }
    }
}
