import Crypto
import Dispatch
import Store
import Sync
import Wire

/// Chunk exchange: the node fetches the chunks of files it wants (referenced by messages and
/// profiles within a quota, or asked for by a command) from every connected peer at once.
extension Node {
    /// Asks for the missing chunks of the file at `path`; returns (missing, total) or nil if
    /// there is no such file. Call on any thread except the node's queue.
    public func fetchFile(_ path: String) -> (missing: Int, total: Int)? {
        queue.sync { fetchFileOnQueue(path) }
    }

    /// `fetchFile` for callers on the node's queue (the local API).
    public func fetchFileOnQueuePublic(_ path: String) -> (missing: Int, total: Int)? { fetchFileOnQueue(path) }

    func fetchFileOnQueue(_ path: String) -> (missing: Int, total: Int)? {
        dispatchPrecondition(condition: .onQueue(queue))
        guard let info = try? store.fileInfo(path) else { return nil }
        fetcher.want(info.missing)
        scheduleChunkFetches()
        return (info.missing.count, info.manifest.chunks.count)
    }

    /// Wants the files that messages and profiles refer to, within the eager quota.
    func fetchReferencedFiles() {
        dispatchPrecondition(condition: .onQueue(queue))
        guard let files = try? store.referencedIncompleteFiles() else { return }
        var budget = config.eagerFetchBytes
        for file in files {
            let bytes = file.missing.count * Int(file.manifest.chunkSize)
            guard bytes <= budget else { continue }
            budget -= bytes
            fetcher.want(file.missing)
        }
        scheduleChunkFetches()
    }

    func scheduleChunkFetches() {
        dispatchPrecondition(condition: .onQueue(queue))
        guard fetcher.pendingCount > 0 else { return }
        for (peer, hashes) in fetcher.schedule(now: monotonicSeconds()) {
            guard let slot = sessions[peer] else { continue }
            perform(slot.machine.requestChunks(hashes), on: slot)
        }
    }

    func chunkArrived(_ hash: Digest32, _ bytes: [UInt8], from slot: SessionSlot) {
        let peer = ObjectIdentifier(slot)
        guard fetcher.isWanted(hash) else { return }  // late duplicate or unrequested: ignore
        guard (try? store.putChunk(hash, bytes)) == true else {
            fetcher.rejected(hash, from: peer)
            close(slot, reason: "sent a chunk that does not match its hash", misbehaved: true)
            scheduleChunkFetches()
            return
        }
        fetcher.received(hash, from: peer)
        scheduleChunkFetches()
    }
}
