import CMemory
import Dispatch
import Foundation

extension Node {
    /// Hands the memory freed since the last tick back to the system, on a tick when no record
    /// arrived and no session moved any (`movingRecords`). Why: malloc keeps what a burst frees
    /// (a sync's batches, verified on several threads, each with its own arena; a large API
    /// response) for reuse, so without this a node's resident memory would stay at its highest
    /// for good. Idle, it costs a walk of the free lists every couple of seconds. Not while
    /// records move: a node serving a sync (which stores nothing) handed back its send buffers'
    /// memory every tick, only to take it again at once, zeroed page by page by the kernel.
    func releaseFreedMemoryWhenQuiet(movingRecords: Bool) {
        dispatchPrecondition(condition: .onQueue(queue))
        defer { sequenceAtLastTick = handledSequence }
        guard !movingRecords, handledSequence == sequenceAtLastTick, verified.isEmpty, arriving.isEmpty else { return }
        _ = Node.releaseFreedMemory()
    }

    /// Caps malloc at one arena per core (at least two), once per process, before the node's
    /// threads start. Why: glibc gives each new thread an arena of its own, up to eight per
    /// core, and each keeps what is freed into it; a sync's records are decoded on the
    /// verifier's threads and freed on the node's queue, so freed memory lay spread over many
    /// arenas. A cold sync of a million records peaked at 200 and 215 MB anonymous with the
    /// default, 150 to 191 MB (six runs) with two arenas on two cores, with the same CPU time
    /// (one arena was slower: its threads queued on its lock). `lanchat` sets this first thing;
    /// a node sets it too, for processes that embed one.
    public static let mallocArenasLimited: Bool = {
        lanchat_limit_malloc_arenas(Int32(max(2, ProcessInfo.processInfo.activeProcessorCount))) != 0
    }()

    /// Hands memory that malloc holds free back to the system; whether any was (always false
    /// where the C library has no way to, which is said once the node runs on one).
    @discardableResult
    static func releaseFreedMemory() -> Bool { lanchat_release_free_memory() != 0 }
}
