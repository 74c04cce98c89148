import Crypto
import Foundation
import Glibc
import Store
import Testing
import TestSupport
import Tree

/// The same promises on a real filesystem that really fills up (a 4 MiB tmpfs, so root only), with
/// the default VFS and plain system calls: the fault disk's full disk is checked against the
/// kernel's ENOSPC.
@Suite("A real full filesystem")
struct RealDiskFullTests {
    @Test("writes until the filesystem is full: the failing one says \"disk full\" with the file, the acknowledged ones stay, and writing resumes once space is freed")
    func realENOSPC() throws {
        guard getuid() == 0 else {
            environmentLimit("mounting a small tmpfs needs root")
            return
        }
        let mountPoint = FileManager.default.temporaryDirectory.appendingPathComponent("lanchat-full-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: true)
        defer { rmdir(mountPoint) }
        guard mount("tmpfs", mountPoint, "tmpfs", 0, "size=4m,mode=0700") == 0 else {
            environmentLimit("mount tmpfs failed: \(String(cString: strerror(errno)))")
            return
        }
        defer { umount2(mountPoint, Int32(MNT_DETACH)) }

        // Space to give back later: what a user frees when told the disk is full.
        let filler = mountPoint + "/filler"
        try Data(count: 1 << 20).write(to: URL(fileURLWithPath: filler))
        let key = PrivateKey()
        let storePath = mountPoint + "/store.sqlite"
        var acknowledged: [(Path, JSONValue)] = []
        do {
            let store = try Store(path: storePath)
            var refusal: StoreError?
            for index in 0..<2_000 {
                let path = try Path("/fill/n\(index)")
                let value = JSONValue.string(String(repeating: "f", count: 3_000) + "\(index)")
                do {
                    try store.set(path, to: value, signer: key, nowMillis: 1_000 + UInt64(index))
                    acknowledged.append((path, value))
                } catch let error as StoreError {
                    refusal = error
                    break
                }
            }
            let error = try #require(refusal, "2,000 writes of 3 kB fitted in 4 MiB")
            #expect("\(error)" == "disk full: could not write \(storePath); free some space and try again")
            #expect(acknowledged.count > 10)
            // An upload now fails the same way, on the chunk files.
            let image: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + [UInt8](repeating: 7, count: 300_000)
            do {
                try store.putFile("images/\(key.publicKey.userID)/big.png", bytes: image, signer: key, nowMillis: 9_000)
                Issue.record("an upload onto a full filesystem was acknowledged")
            } catch let error as StoreError {
                #expect(error.isDiskFull, "\(error)")
                #expect("\(error)".contains(mountPoint + "/store.chunks."), "\(error)")
            }
            #expect(try store.integrityCheck() == ["ok"])
            for (path, value) in acknowledged { #expect(try store.value(at: path) == value) }

            // Space comes back: the same open store writes again.
            unlink(filler)
            try store.set(try Path("/after"), to: .string("space again"), signer: key, nowMillis: 10_000)
            #expect(try store.value(at: try Path("/after")) == .string("space again"))
        }
        let reopened = try Store(path: storePath)
        #expect(try reopened.integrityCheck() == ["ok"])
        for (path, value) in acknowledged { #expect(try reopened.value(at: path) == value) }
        #expect(try reopened.value(at: try Path("/after")) == .string("space again"))
    }
}
