import Crypto
import Foundation
import Private
import Testing
import Wire

/// A membership change in a group of 200: one key record with a box per member, which any
/// member opens by trying the boxes. Prints the costs with LANCHAT_PRINT_COSTS set.
@Suite("Private: a group of 200")
struct LargeGroupTests {
    @Test("a membership change in a group of 200: one record, opened by a member, not by the removed one")
    func changeIn200() throws {
        let creator = Fixture.alice
        let members = (0..<199).map { i in Person(UInt8(truncatingIfNeeded: 10 + i)) }
        let clock = ContinuousClock()
        var records = [Record]()
        let (e1, _) = try Fixture.keyRecord(creator, epoch: 1, members: [creator] + members, clock: 1 << 16)
        records.append(e1)
        var e2: Record!
        let sealing = try clock.measure {
            (e2, _) = try Fixture.keyRecord(creator, epoch: 2, members: [creator] + members.dropLast(), clock: 2 << 16)
        }
        records.append(e2)
        let last = members[members.count - 2], removed = members[members.count - 1]
        var view: Membership!
        let opening = clock.measure { view = Membership(conversation: Fixture.group, records: records, device: last.device) }
        #expect(view.currentMembers?.count == 199)
        #expect(view.writableEpoch(for: last.id) != nil)
        let removedView = Membership(conversation: Fixture.group, records: records, device: removed.device)
        #expect(removedView.key(of: e2.id) == nil && removedView.key(of: e1.id) != nil)
        if ProcessInfo.processInfo.environment["LANCHAT_PRINT_COSTS"] != nil {
            print("group of 200: key record \(e2.encoded.count) bytes, sealed in \(sealing), both epochs opened by a member in \(opening)")
        }
    }
}
