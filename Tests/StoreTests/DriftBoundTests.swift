import Crypto
import Testing
import Tree
import Wire
@testable import Store

/// The drift bound of Protocol.md §3.3 (the README's 5 minutes), to the millisecond: a record
/// stamped exactly 300,000 ms ahead of the receiver is stored, one stamped a millisecond more is
/// not accepted yet, and is stored once the receiver's clock catches up.
@Suite("Drift bound")
struct DriftBoundTests {
    @Test("a record 300,000 ms ahead (any counter) is stored; 300,001 ms ahead waits")
    func driftBoundToTheMillisecond() throws {
        let now: UInt64 = 1_700_000_000_000
        func record(aheadMillis: UInt64, counter: UInt64, path: String) throws -> Record {
            try Record.make(body: .write([WritePair(path: try Path(path), value: 1)]),
                            clock: (now + aheadMillis) << 16 | counter, signer: testAuthors[0])
        }
        let store = try memoryStore()
        let atBound = try record(aheadMillis: 300_000, counter: 0xFFFF, path: "/at")
        let past = try record(aheadMillis: 300_001, counter: 0, path: "/past")
        let report = try store.ingest([atBound, past], nowMillis: now)
        #expect(report.added == 1 && report.refused.count == 1)
        #expect(try store.value(at: try Path("/at")) == 1)
        #expect(try store.value(at: try Path("/past")) == .null)
        // A millisecond later it is within the bound.
        #expect(try store.ingest([past], nowMillis: now + 1).added == 1)
        #expect(try store.value(at: try Path("/past")) == 1)
    }
}
