import Testing
@testable import Sync
import TestSupport

@Suite("Negentropy reconciliation")
struct NegentropyReconcileTests {
    static let smallSizes = [0, 1, 2, 10, 1000, 10_000]

    /// Each size × scenario × seed must find exactly a∖b and b∖a; odd seeds run with the default
    /// 60 kB frames, even seeds unlimited.
    @Test("finds exactly the differences", arguments: smallSizes, NegentropyScenario.allCases)
    func exactDifferences(size: Int, scenario: NegentropyScenario) throws {
        let seeds: [UInt64] = size >= 10_000 ? [1, 2] : [1, 2, 3, 4, 5, 6]
        for seed in seeds {
            let fixture = NegentropyFixture.make(size: size, scenario: scenario, seed: seed)
            let result = try NegentropySession.reconcileInMemory(fixture.a, fixture.b, frameSizeLimit: seed % 2 == 1 ? 60_000 : 0)
            #expect(result.have == fixture.aOnly, "size \(size) \(scenario) seed \(seed)")
            #expect(result.need == fixture.bOnly, "size \(size) \(scenario) seed \(seed)")
            if scenario == .identical {
                #expect(result.roundTrips == 1)
            }
        }
    }

    @Test("finds exactly the differences at 100,000 items", arguments: NegentropyScenario.allCases)
    func exactDifferencesLarge(scenario: NegentropyScenario) throws {
        let fixture = NegentropyFixture.make(size: 100_000, scenario: scenario, seed: 7)
        let result = try NegentropySession.reconcileInMemory(fixture.a, fixture.b, frameSizeLimit: 60_000)
        #expect(result.have == fixture.aOnly)
        #expect(result.need == fixture.bOnly)
    }

    @Test("many equal timestamps: bounds rely on id prefixes")
    func sameTimestamp() throws {
        var rng = SplitMix64(seed: 99)
        let all = (0..<3000).map { index in
            // Ids share their first two bytes in runs, so separating prefixes are 3+ bytes long.
            var id = NegentropyFixture.randomID(&rng)
            id[0] = 0x42
            id[1] = UInt8(index % 3)
            return NegentropyItem(timestamp: 1234, id: id)!
        }
        var a: [NegentropyItem] = [], b: [NegentropyItem] = []
        for item in all {
            switch rng.next() % 10 {
            case 0: a.append(item)
            case 1: b.append(item)
            default: a.append(item); b.append(item)
            }
        }
        let result = try NegentropySession.reconcileInMemory(a, b, frameSizeLimit: 4096)
        #expect(result.have == Set(a.map(\.id)).subtracting(b.map(\.id)))
        #expect(result.need == Set(b.map(\.id)).subtracting(a.map(\.id)))
    }

    @Test("responders report no differences; initiator steps end with nil")
    func roles() throws {
        let fixture = NegentropyFixture.make(size: 10, scenario: .randomBothSides, seed: 2)
        var initiator = try NegentropySession(items: fixture.a)
        var responder = try NegentropySession(items: fixture.b)
        let query = try initiator.initiate()
        let reply = try responder.reconcile(query)
        #expect(responder.role == .responder && initiator.role == .initiator)
        #expect(reply.have.isEmpty && reply.need.isEmpty && reply.next != nil)
        let step = try initiator.reconcile(try #require(reply.next))
        #expect(step.isComplete)
        #expect(Set(step.have) == fixture.aOnly && Set(step.need) == fixture.bOnly)
        #expect(throws: NegentropyError.wrongRole) { try initiator.initiate() }
        #expect(throws: NegentropyError.wrongRole) { try responder.initiate() }
    }
}

@Suite("Negentropy frame size limit")
struct NegentropyFrameLimitTests {
    @Test("limits below 4096 are refused; 0 means unlimited")
    func minimum() throws {
        #expect(throws: NegentropyError.frameSizeLimitTooSmall(4095)) { try NegentropySession(items: [NegentropyItem](), frameSizeLimit: 4095) }
        _ = try NegentropySession(items: [NegentropyItem](), frameSizeLimit: 4096)
        _ = try NegentropySession(items: [NegentropyItem](), frameSizeLimit: 0)
    }

    @Test("every message fits 4096 bytes and reconciliation still completes",
          arguments: [NegentropyScenario.randomBothSides, .initiatorEmpty, .responderEmpty, .recentEnd])
    func limit4096(scenario: NegentropyScenario) throws {
        let fixture = NegentropyFixture.make(size: 10_000, scenario: scenario, seed: 5)
        let exchange = try NegentropyExchange.run(fixture, frameSizeLimit: 4096)
        #expect(exchange.have == fixture.aOnly)
        #expect(exchange.need == fixture.bOnly)
        let largest = exchange.messages.map(\.count).max() ?? 0
        #expect(largest <= 4096)
        #expect(exchange.reportedCount == exchange.have.count + exchange.need.count, "no id is reported twice")
        if scenario == .initiatorEmpty {
            // 10,000 ids cannot cross in one 4 kB frame, so the limit must have split the work.
            #expect(exchange.roundTrips > 50)
        }
    }

    @Test("unlimited frames carry the whole id list in one reply")
    func unlimited() throws {
        let fixture = NegentropyFixture.make(size: 10_000, scenario: .initiatorEmpty, seed: 5)
        let exchange = try NegentropyExchange.run(fixture, frameSizeLimit: 0)
        #expect(exchange.roundTrips == 1)
        #expect(exchange.need == fixture.bOnly)
        #expect((exchange.messages.map(\.count).max() ?? 0) > 10_000 * 32)
    }
}

@Suite("Negentropy cost")
struct NegentropyCostTests {
    @Test("few differences among 100,000 items cost few round trips and bytes", arguments: [1, 10, 1000])
    func cost(differences: Int) throws {
        let fixture = NegentropyFixture.withDifferences(common: 100_000 - differences, differences: differences, seed: 11)
        for frameSizeLimit in [60_000, 0] {
            let result = try NegentropySession.reconcileInMemory(fixture.a, fixture.b, frameSizeLimit: frameSizeLimit)
            print("negentropy 100k items, \(differences) differences, frame limit \(frameSizeLimit): "
                  + "\(result.roundTrips) round trips, \(result.bytesAtoB) bytes A→B, \(result.bytesBtoA) bytes B→A")
            #expect(result.have == fixture.aOnly)
            #expect(result.need == fixture.bOnly)
            if differences == 1 {
                #expect(result.roundTrips <= 3)
                #expect(result.bytesAtoB + result.bytesBtoA < 4000)
            }
        }
    }
}
