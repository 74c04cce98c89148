import Crypto
import Dispatch
import Store

/// Where fetched chunks go once they arrived, in two stages beside the node's queue (which goes
/// on decrypting): the chunks that arrived are hashed as one batch across the cores that are
/// free, and those that match their hash go to a writer that stores what has been checked in
/// one transaction (`ChunkWriter`).
///
/// Why two stages: storing waits for the disk (a batch's bytes are synced before the index names
/// them), and the next batch's hashing need not wait for that, nor the writer for hashing.
///
/// Batching follows each stage's pace: the chunks that arrive while a batch is hashed form the
/// next one, and those checked while a batch is stored are stored together next, so when a
/// stage lags its batches grow, and with them the chunks per hashing round and per commit,
/// instead of queueing many small ones each with its own fixed cost. A batch is hashed in
/// groups of eight chunks (four without AVX-512), one group per core at a time, each group at
/// once (`VerifiedChunk.check`); so that groups fill up, a batch starts once a group has arrived
/// or the node's queue has handled the reads that were waiting, not at every chunk.
///
/// `report` gets, on the node's queue, each batch's outcome: the hashes stored (durable against
/// a crash of the process, see `ChunkWriter`), the chunks that did not match their hash, and a
/// description of the error if the commit failed (the batch then was not stored).
final class ChunkIntake: @unchecked Sendable {
    struct Outcome: Sendable {
        /// The batch's chunks: stored, unless `failure`.
        var batch: [Digest32]
        var bad: [ArrivedChunk]
        var failure: String?
    }

    /// Chunks arrived and not yet being checked, and whether a batch is being checked: owned by
    /// the node's queue, where they arrive.
    private var arrived: [ArrivedChunk] = []
    private var checking = false
    /// Whether a batch is due to start after the reads waiting on the node's queue.
    private var checkQueued = false
    /// Where a batch is hashed, across the cores that are free.
    private let checkQueue = DispatchQueue(label: "lanchat.node.chunks.check", qos: .userInitiated)
    /// The writer's queue; owns `checked`, `bad` and `flushQueued`.
    private let queue = DispatchQueue(label: "lanchat.node.chunks", qos: .userInitiated)
    private let writer: ChunkWriter
    private let nodeQueue: DispatchQueue
    private let report: @Sendable (Outcome) -> Void
    /// Every hop between the three queues goes through the node's scheduler.
    private let scheduler: any NodeScheduler
    private var checked: [VerifiedChunk] = []
    private var bad: [ArrivedChunk] = []
    private var flushQueued = false

    /// `report` runs on `nodeQueue`.
    init(writer: ChunkWriter, nodeQueue: DispatchQueue, scheduler: any NodeScheduler, report: @escaping @Sendable (Outcome) -> Void) {
        self.writer = writer
        self.scheduler = scheduler
        self.nodeQueue = nodeQueue
        self.report = report
    }

    /// Checks `chunk` and stores it if it matches its hash. On the node's queue.
    func add(_ chunk: ArrivedChunk) {
        dispatchPrecondition(condition: .onQueue(nodeQueue))
        arrived.append(chunk)
        guard !checking else { return }
        if arrived.count >= Self.group {
            checkArrived()
        } else if !checkQueued {
            checkQueued = true
            scheduler.async(on: nodeQueue) { [self] in
                checkQueued = false
                if !checking { checkArrived() }
            }
        }
    }

    /// Chunks hashed together.
    static let group = BLAKE2b.laneCount

    /// Hashes the chunks that arrived as one batch, hands the outcome to the writer, and then
    /// takes the chunks that arrived meanwhile.
    private func checkArrived() {
        dispatchPrecondition(condition: .onQueue(nodeQueue))
        guard !arrived.isEmpty else { return }
        checking = true
        let batch = arrived
        arrived = []
        scheduler.async(on: checkQueue) { [self] in
            // Each iteration writes only its own group's elements.
            nonisolated(unsafe) let results = UnsafeMutableBufferPointer<VerifiedChunk?>.allocate(capacity: batch.count)
            results.initialize(repeating: nil)
            defer { results.deinitialize().deallocate() }
            DispatchQueue.concurrentPerform(iterations: (batch.count + Self.group - 1) / Self.group) { group in
                let range = group * Self.group..<min((group + 1) * Self.group, batch.count)
                let checked = VerifiedChunk.check(batch[range].map { (hash: $0.hash, bytes: $0.bytes) })
                for (index, chunk) in zip(range, checked) { results[index] = chunk }
            }
            let good = results.compactMap { $0 }
            let wrong = zip(batch, results).filter { $0.1 == nil }.map(\.0)
            scheduler.async(on: queue) { [self] in
                checked += good
                bad += wrong
                // Queued behind the batches already waiting here, so they join this one.
                if !flushQueued {
                    flushQueued = true
                    scheduler.async(on: queue) { [self] in flush() }
                }
            }
            scheduler.async(on: nodeQueue) { [self] in
                checking = false
                checkArrived()
            }
        }
    }

    /// Stores the chunks checked so far in one transaction and reports the outcome.
    private func flush() {
        dispatchPrecondition(condition: .onQueue(queue))
        flushQueued = false
        var outcome = Outcome(batch: checked.map(\.hash), bad: bad)
        do { try writer.put(checked) } catch { outcome.failure = "\(error)" }
        (checked, bad) = ([], [])
        scheduler.async(on: nodeQueue) { [report, outcome] in report(outcome) }
    }
}
