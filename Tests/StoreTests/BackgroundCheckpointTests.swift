import Foundation
import Testing
import Tree
import Wire
@testable import Store
import TestSupport

@Suite("Background checkpoints")
struct BackgroundCheckpointTests {
    @Test("with checkpoints off the committing thread, the WAL is still copied back and reused, and nothing is lost")
    func walStaysBounded() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.path + "/store.sqlite"
        let author = testAuthors[0]
        let text = JSONValue.string(String(repeating: "x", count: 3_000))
        do {
            let store = try Store(path: path)
            try store.checkpointInBackground()
            // About 12 MB of records, three times the WAL growth between checkpoints.
            for batch in 0..<10 {
                let records = try (0..<400).map { i in
                    let n = batch * 400 + i
                    return try Record.make(body: .write([WritePair(path: try Path(segments: ["notes", "n\(n)"]), value: text)]),
                                           clock: UInt64(1_000 + n) << 16, signer: author)
                }
                #expect(try store.ingest(records, nowMillis: farFuture).added == 400)
                store.waitForCheckpoints()
            }
            // Without the checkpoints the WAL would hold all of it.
            let walBytes = try FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? Int ?? 0
            #expect(walBytes < 9_000_000, "WAL of \(walBytes) bytes")
        }
        let reopened = try Store(path: path)
        #expect(try reopened.childKeys(of: try Path(segments: ["notes"])).count == 4_000)
        #expect(try reopened.integrityCheck() == ["ok"])
    }
}
