/// Bytes accepted by `TCPConnection.write` but not yet taken by the kernel.
///
/// Kept as a list of chunks so a large write is never copied, while small
/// writes are appended to the last chunk so a burst of tiny records costs one
/// `send` rather than one each.
struct OutgoingBuffer {
    /// Small writes are merged into the last chunk while it stays under this.
    static let coalesceLimit = 64 * 1024

    private var chunks: [[UInt8]] = []
    /// Index of the first chunk still holding unsent bytes.
    private var head = 0
    /// Bytes of `chunks[head]` already sent.
    private var offset = 0
    /// Unsent bytes in total.
    private(set) var count = 0

    var isEmpty: Bool { count == 0 }

    mutating func append(_ bytes: [UInt8]) {
        guard !bytes.isEmpty else { return }
        count += bytes.count
        if chunks.count > head, chunks[chunks.count - 1].count + bytes.count <= Self.coalesceLimit {
            chunks[chunks.count - 1].append(contentsOf: bytes)
        } else {
            chunks.append(bytes)
        }
    }

    /// Calls `body` with the unsent part of the first chunk.
    func withFirstChunk<R>(_ body: (UnsafeRawBufferPointer) -> R) -> R? {
        guard head < chunks.count else { return nil }
        let start = offset
        return chunks[head].withUnsafeBytes { body(UnsafeRawBufferPointer(rebasing: $0[start...])) }
    }

    /// Marks `sent` bytes from the front as written.
    mutating func consume(_ sent: Int) {
        precondition(sent >= 0 && sent <= count)
        count -= sent
        offset += sent
        while head < chunks.count, offset >= chunks[head].count {
            offset -= chunks[head].count
            chunks[head] = []
            head += 1
        }
        // Drop sent chunks in batches so `consume` stays O(1) amortised.
        if head == chunks.count {
            chunks.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 64, head * 2 >= chunks.count {
            chunks.removeFirst(head)
            head = 0
        }
    }

    mutating func removeAll() {
        chunks = []
        head = 0
        offset = 0
        count = 0
    }
}
