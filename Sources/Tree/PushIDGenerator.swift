/// Generates Firebase-style push ids: 20 characters, 8 encoding the time in
/// milliseconds and 12 random ones.
///
/// Ids sort (as bytes, as UTF-16 and in Firebase key order) by creation time,
/// so lists of messages keyed by push id come out chronologically; within one
/// generator they are strictly increasing even when many are made in the same
/// millisecond or the clock steps backwards.
public struct PushIDGenerator: Sendable {
    /// The 64 characters used, in ASCII order so that byte order is value order.
    public static let alphabet: [UInt8] = Array("-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz".utf8)

    /// Number of time characters (6 bits each, most significant first).
    public static let timeLength = 8
    /// Number of random characters.
    public static let randomLength = 12

    private var lastMillis: UInt64?
    private var lastRandom: [UInt8] = []

    /// A generator that has not issued any id yet.
    public init() {}

    /// The next id for the given wall-clock time. In the same millisecond as
    /// the previous id, or when the clock went backwards, the previous time is
    /// kept and the previous random part is incremented by one (with carry).
    public mutating func next(nowMillis: UInt64, using rng: inout some RandomNumberGenerator) -> String {
        var millis = nowMillis
        var random: [UInt8]
        if let last = lastMillis, nowMillis <= last {
            millis = last
            random = lastRandom
            var position = Self.randomLength - 1
            while position >= 0 && random[position] == 63 {
                random[position] = 0
                position -= 1
            }
            if position >= 0 {
                random[position] += 1
            } else {
                // All 2^72 random values used up in one millisecond: move on.
                millis = last + 1
                random = Self.freshRandom(using: &rng)
            }
        } else {
            random = Self.freshRandom(using: &rng)
        }
        lastMillis = millis
        lastRandom = random

        var bytes = [UInt8](repeating: 0, count: Self.timeLength + Self.randomLength)
        var time = millis
        for position in stride(from: Self.timeLength - 1, through: 0, by: -1) {
            bytes[position] = Self.alphabet[Int(time & 63)]
            time >>= 6
        }
        for position in 0..<Self.randomLength {
            bytes[Self.timeLength + position] = Self.alphabet[Int(random[position])]
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The creation time (milliseconds) encoded in a push id, or nil when the
    /// string is not 20 characters of the push id alphabet. Lets readers
    /// show when a message was posted without a separate field.
    public static func timestamp(of id: String) -> UInt64? {
        let utf8 = Array(id.utf8)
        guard utf8.count == timeLength + randomLength else { return nil }
        var millis: UInt64 = 0
        for (position, byte) in utf8.enumerated() {
            guard let digit = digitValue(byte) else { return nil }
            if position < timeLength { millis = millis << 6 | UInt64(digit) }
        }
        return millis
    }

    private static func digitValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "-"): return 0
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0") + 1
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): return byte - UInt8(ascii: "A") + 11
        case UInt8(ascii: "_"): return 37
        case UInt8(ascii: "a")...UInt8(ascii: "z"): return byte - UInt8(ascii: "a") + 38
        default: return nil
        }
    }

    private static func freshRandom(using rng: inout some RandomNumberGenerator) -> [UInt8] {
        (0..<randomLength).map { _ in UInt8.random(in: 0..<64, using: &rng) }
    }
}
