import Crypto
@testable import Node
import Testing

/// The record set names the clocks of the records held under an id's first 8 bytes, so a lookup
/// by id is one probe of the store's index on (clock, id); none named means certainly not held.
@Suite("Record set clocks by id")
struct RecordSetClockTests {
    func id(prefix: UInt8, rest: UInt8) throws -> Digest32 {
        try Digest32(bytes: [UInt8](repeating: prefix, count: 8) + [UInt8](repeating: rest, count: 24))
    }

    @Test("each record's clock is named; ids sharing a prefix name every clock among them")
    func clocks() throws {
        var set = RecordSet()
        let a = try id(prefix: 1, rest: 1), b = try id(prefix: 1, rest: 2), c = try id(prefix: 1, rest: 3)
        let other = try id(prefix: 2, rest: 1)
        #expect(set.clocks(of: a).isEmpty)
        set.insert(clock: 10, id: a)
        #expect(set.clocks(of: a) == [10])
        #expect(set.clocks(of: other).isEmpty)
        // A member can make ids sharing 8 bytes: each one's clock is kept, once.
        set.insert(clock: 20, id: b)
        set.insert(clock: 10, id: c)
        set.insert(clock: 30, id: c)
        #expect(set.clocks(of: a) == [10, 20, 30])
        #expect(set.clocks(of: b) == [10, 20, 30])
        #expect(set.count == 4)
    }
}
