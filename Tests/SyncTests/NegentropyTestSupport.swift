import Testing
@testable import Sync
import TestSupport

/// How two sets differ in a reconciliation test.
enum NegentropyScenario: String, CaseIterable, Sendable, CustomStringConvertible {
    /// Items missing at random positions on both sides.
    case randomBothSides
    /// Only the items with the largest timestamps differ, as after a short partition.
    case recentEnd
    /// The initiator has nothing.
    case initiatorEmpty
    /// The responder has nothing.
    case responderEmpty
    /// Both sides hold the same items.
    case identical

    var description: String { rawValue }
}

/// Two item sets and the differences the protocol must find between them.
struct NegentropyFixture {
    var a: [NegentropyItem] = []
    var b: [NegentropyItem] = []
    var aOnly: Set<[UInt8]> = []
    var bOnly: Set<[UInt8]> = []

    /// `count` distinct items with HLC-like timestamps drawn from a range about four times
    /// larger than `count`, so equal timestamps (and thus id-prefix bounds) occur often.
    static func universe(count: Int, rng: inout SplitMix64) -> [NegentropyItem] {
        let base: UInt64 = 1_750_000_000_000 << 16
        let spread = UInt64(count) * 4 + 1
        return (0..<count).map { _ in
            let timestamp = base + rng.next() % spread
            return NegentropyItem(timestamp: timestamp, id: randomID(&rng))!
        }
    }

    static func randomID(_ rng: inout SplitMix64) -> [UInt8] {
        (0..<4).flatMap { _ in withUnsafeBytes(of: rng.next()) { Array($0) } }
    }

    static func make(size: Int, scenario: NegentropyScenario, seed: UInt64) -> NegentropyFixture {
        var rng = SplitMix64(seed: seed &* 1_000_003 &+ UInt64(size))
        let all = universe(count: size, rng: &rng)
        var fixture = NegentropyFixture()
        switch scenario {
        case .identical:
            fixture.a = all
            fixture.b = all
        case .initiatorEmpty:
            fixture.b = all
        case .responderEmpty:
            fixture.a = all
        case .randomBothSides:
            // Difference rate varies with the seed: 1%, 10% or 50% per side.
            let percent = [1, 10, 50][Int(seed % 3)]
            for item in all {
                let roll = Int(rng.next() % 200)
                if roll < percent { fixture.a.append(item) }
                else if roll < 2 * percent { fixture.b.append(item) }
                else { fixture.a.append(item); fixture.b.append(item) }
            }
        case .recentEnd:
            let sorted = all.sorted()
            let recent = max(1, size / 50)
            for (index, item) in sorted.enumerated() {
                if index < sorted.count - recent {
                    fixture.a.append(item); fixture.b.append(item)
                } else if rng.next() % 2 == 0 {
                    fixture.a.append(item)
                } else {
                    fixture.b.append(item)
                }
            }
        }
        fixture.a.shuffle(using: &rng)
        fixture.b.shuffle(using: &rng)
        let aIDs = Set(fixture.a.map(\.id))
        let bIDs = Set(fixture.b.map(\.id))
        fixture.aOnly = aIDs.subtracting(bIDs)
        fixture.bOnly = bIDs.subtracting(aIDs)
        return fixture
    }

    /// `common` shared items plus `differences` items split between the two sides.
    static func withDifferences(common: Int, differences: Int, seed: UInt64) -> NegentropyFixture {
        var rng = SplitMix64(seed: seed)
        let all = universe(count: common + differences, rng: &rng)
        var fixture = NegentropyFixture()
        var diffIndexes = Set<Int>()
        while diffIndexes.count < differences { diffIndexes.insert(Int(rng.next() % UInt64(all.count))) }
        for (index, item) in all.enumerated() {
            if !diffIndexes.contains(index) {
                fixture.a.append(item); fixture.b.append(item)
            } else if rng.next() % 2 == 0 {
                fixture.a.append(item); fixture.aOnly.insert(item.id)
            } else {
                fixture.b.append(item); fixture.bOnly.insert(item.id)
            }
        }
        return fixture
    }
}

/// Drives two sessions by hand, recording every message, as a transport would.
struct NegentropyExchange {
    var have = Set<[UInt8]>()
    var need = Set<[UInt8]>()
    var messages: [[UInt8]] = []
    var roundTrips = 0
    /// Ids reported over all steps, counting repeats (a repeat would mean a wasted transfer).
    var reportedCount = 0

    static func run(_ fixture: NegentropyFixture, frameSizeLimit: Int) throws -> NegentropyExchange {
        var initiator = try NegentropySession(items: fixture.a, frameSizeLimit: frameSizeLimit, maxMessageBytes: 1 << 26)
        var responder = try NegentropySession(items: fixture.b, frameSizeLimit: frameSizeLimit, maxMessageBytes: 1 << 26)
        var exchange = NegentropyExchange()
        var query: [UInt8]? = try initiator.initiate()
        while let message = query, exchange.roundTrips < 10_000 {
            exchange.roundTrips += 1
            exchange.messages.append(message)
            let reply = try #require(try responder.reconcile(message).next)
            exchange.messages.append(reply)
            let step = try initiator.reconcile(reply)
            exchange.reportedCount += step.have.count + step.need.count
            exchange.have.formUnion(step.have)
            exchange.need.formUnion(step.need)
            query = step.next
        }
        return exchange
    }
}

func hex(_ string: String) -> [UInt8] {
    var bytes: [UInt8] = []
    var index = string.startIndex
    while index < string.endIndex {
        let next = string.index(index, offsetBy: 2)
        bytes.append(UInt8(string[index..<next], radix: 16)!)
        index = next
    }
    return bytes
}
