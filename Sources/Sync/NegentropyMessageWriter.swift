/// Builds one outgoing message, tracking the previous timestamp for delta encoding.
///
/// `mark`/`rollback` let the engine write a range, see whether it still fits the frame, and undo
/// it if not; that is simpler and exact compared with predicting encoded sizes.
struct NegentropyMessageWriter {
    private(set) var bytes: [UInt8] = [NegentropySession.protocolVersion]
    private var lastTimestamp: UInt64 = 0

    struct Mark {
        fileprivate let count: Int
        fileprivate let lastTimestamp: UInt64
    }

    var count: Int { bytes.count }

    func mark() -> Mark { Mark(count: bytes.count, lastTimestamp: lastTimestamp) }

    mutating func rollback(to mark: Mark) {
        bytes.removeSubrange(mark.count...)
        lastTimestamp = mark.lastTimestamp
    }

    mutating func append(bound: NegentropyBound) {
        if bound.isInfinity {
            NegentropyVarint.append(0, to: &bytes)
            lastTimestamp = .max
            NegentropyVarint.append(0, to: &bytes)
            return
        }
        NegentropyVarint.append(bound.timestamp - lastTimestamp + 1, to: &bytes)
        lastTimestamp = bound.timestamp
        NegentropyVarint.append(UInt64(bound.prefixLength), to: &bytes)
        bound.id.appendBytes(to: &bytes, count: bound.prefixLength)
    }

    mutating func append(mode: NegentropyMode) {
        NegentropyVarint.append(mode.rawValue, to: &bytes)
    }

    mutating func append(varint value: Int) {
        NegentropyVarint.append(UInt64(value), to: &bytes)
    }

    mutating func append(raw: some Sequence<UInt8>) {
        bytes.append(contentsOf: raw)
    }

    mutating func append(id: NegentropyPackedID) {
        id.appendBytes(to: &bytes)
    }
}
