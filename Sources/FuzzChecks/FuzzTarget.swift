// FuzzChecks: the per-target checks shared by the libFuzzer targets (Tools/fuzzing/targets) and the
// corpus and regression replay in `swift test` (Tests/FuzzReplayTests), so the invariants exist
// once. A check feeds one input to a decoder or state machine and throws `FuzzViolation` when an
// invariant breaks; a crash inside the code under test stays a crash.

/// An invariant that an input broke.
public struct FuzzViolation: Error, CustomStringConvertible {
    public let target: String
    public let message: String
    public var description: String { "fuzz target \(target): \(message)" }
}

/// The fuzz targets by name: one per decoder or state machine that reads outside input.
public enum FuzzTarget: String, CaseIterable, Sendable {
    case cbor
    case record
    case sealedPlaintext = "sealed-plaintext"
    case export
    case datagram
    case frames
    case sessionMessage = "session-message"
    case liveValue = "live-value"
    case negentropyResponder = "negentropy-responder"
    case negentropyInitiator = "negentropy-initiator"
    case noiseResponder = "noise-responder"
    case peerSession = "peer-session"
    case http
    case websocket
    case json
    case path
    case query

    /// Runs this target's check on one input.
    public func check(_ input: [UInt8]) throws(FuzzViolation) {
        switch self {
        case .cbor: try WireChecks.cbor(input)
        case .record: try WireChecks.record(input)
        case .sealedPlaintext: try WireChecks.sealedPlaintext(input)
        case .export: try WireChecks.exportStream(input)
        case .datagram: try WireChecks.datagram(input)
        case .frames: try WireChecks.frames(input)
        case .sessionMessage: try WireChecks.sessionMessage(input)
        case .liveValue: try WireChecks.liveValue(input)
        case .negentropyResponder: try NegentropyChecks.responder(input)
        case .negentropyInitiator: try NegentropyChecks.initiator(input)
        case .noiseResponder: try NoiseChecks.responder(input)
        case .peerSession: try PeerSessionChecks.session(input)
        case .http: try HTTPChecks.requests(input)
        case .websocket: try WebSocketChecks.stream(input)
        case .json: try TreeChecks.json(input)
        case .path: try TreeChecks.path(input)
        case .query: try TreeChecks.query(input)
        }
    }

    /// The body of a libFuzzer target's `LLVMFuzzerTestOneInput`: a broken invariant aborts, so
    /// libFuzzer saves the input as a crash.
    public static func fuzz(_ name: String, _ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
        guard let target = FuzzTarget(rawValue: name) else { fatalError("unknown fuzz target \(name)") }
        let input = Array(UnsafeBufferPointer(start: data, count: size))
        do {
            try target.check(input)
        } catch {
            fatalError("\(error)")
        }
        return 0
    }
}

/// Throws a violation of `target` unless `condition` holds.
@inline(__always)
func require(_ condition: @autoclosure () -> Bool, _ target: FuzzTarget,
             _ message: @autoclosure () -> String) throws(FuzzViolation) {
    if !condition() { throw FuzzViolation(target: target.rawValue, message: message()) }
}

/// Reads a fuzz input as a few control bytes followed by the payload, so one input can pick a
/// mode and how to cut the payload. Past the end every control byte reads as 0.
struct FuzzInput {
    let bytes: [UInt8]
    private(set) var position = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    mutating func byte() -> UInt8 {
        guard position < bytes.count else { return 0 }
        defer { position += 1 }
        return bytes[position]
    }

    /// Everything not read yet.
    var rest: [UInt8] { position < bytes.count ? Array(bytes[position...]) : [] }
}

/// Cuts `bytes` into consecutive pieces whose sizes cycle through `sizes` (each at least 1).
func pieces(_ bytes: [UInt8], sizes: [Int]) -> [[UInt8]] {
    var out = [[UInt8]]()
    var offset = 0
    var index = 0
    while offset < bytes.count {
        let size = max(1, sizes.isEmpty ? bytes.count : sizes[index % sizes.count])
        let end = min(bytes.count, offset + size)
        out.append(Array(bytes[offset..<end]))
        offset = end
        index += 1
    }
    return out
}

func hex(_ bytes: some Sequence<UInt8>) -> String {
    bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
}
