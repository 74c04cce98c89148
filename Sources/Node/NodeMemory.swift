import CMemory
import Dispatch

extension Node {
    /// Hands the memory freed since the last tick back to the system, on a tick when no record
    /// arrived. Why: malloc keeps what a burst frees (a sync's batches, verified on several
    /// threads, each with its own arena; a large API response) for reuse, so without this a
    /// node's resident memory would stay at its highest for good. Idle, it costs a walk of the
    /// free lists every couple of seconds.
    func releaseFreedMemoryWhenQuiet() {
        dispatchPrecondition(condition: .onQueue(queue))
        defer { sequenceAtLastTick = handledSequence }
        guard handledSequence == sequenceAtLastTick, verified.isEmpty, arriving.isEmpty else { return }
        _ = Node.releaseFreedMemory()
    }

    /// Hands memory that malloc holds free back to the system; whether any was (always false
    /// where the C library has no way to, which is said once the node runs on one).
    @discardableResult
    static func releaseFreedMemory() -> Bool { lanchat_release_free_memory() != 0 }
}
