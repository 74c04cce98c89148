import Crypto
import Dispatch
import Store
import Sync
import Transport
import Wire

/// Chunk exchange: the node fetches the chunks of files it wants (referenced by messages and
/// profiles within a quota, or asked for by a command) from every connected peer at once.
extension Node {
    /// Asks for the missing chunks of the file at `path`; returns (missing, total) or nil if
    /// there is no such file. Call on any thread except the node's queue.
    public func fetchFile(_ path: String) -> (missing: Int, total: Int)? {
        queue.sync { fetchFileOnQueue(path) }
    }

    /// `fetchFile` for callers on the node's queue (the local API, the control channel).
    @discardableResult
    public func fetchFileOnQueue(_ path: String) -> (missing: Int, total: Int)? {
        dispatchPrecondition(condition: .onQueue(queue))
        guard let info = try? store.fileInfo(path) else { return nil }
        track(info)
        fetcher.want(info.missing)
        scheduleChunkFetches()
        return (info.missing.count, info.manifest.chunks.count)
    }

    /// Wants the files that messages and profiles refer to, within the eager quota: those whose
    /// reference is new since the last call, those that `paths` (files whose entry or manifest
    /// just arrived) made fetchable, and those left over for want of quota once chunks wanted
    /// earlier have arrived. A file wanted once stays wanted in the fetcher until its chunks
    /// arrive, so nothing is read again for it; reading every reference at every turn cost a
    /// node with a year of chat (tens of thousands of photos no peer had) a fifth of its time.
    ///
    /// The quota bounds the chunks wanted without being asked at any time: what the fetcher
    /// still wants counts against it (each chunk at most `Store.chunkSize`).
    func fetchReferencedFiles(paths: Set<String> = []) {
        dispatchPrecondition(condition: .onQueue(queue))
        var files = [FileInfo]()
        if let (fresh, last) = try? store.referencedIncompleteFiles(after: fileRefsRead) {
            fileRefsRead = last
            files += fresh
        }
        var budget = config.eagerFetchBytes - fetcher.pendingCount * Store.chunkSize
        var again = paths
        if budget > 0 {
            again.formUnion(filesOverQuota)
            filesOverQuota.removeAll()
        }
        if !again.isEmpty, let found = try? store.referencedIncompleteFiles(paths: again) { files += found }
        for file in files {
            // Chunks wanted already (the same file found again) are counted in the budget already.
            let bytes = file.missing.count { !fetcher.isWanted($0) } * Int(file.manifest.chunkSize)
            guard bytes <= budget else {
                // Wanted at a later turn, unless it is beyond the quota on its own.
                if file.missing.count * Int(file.manifest.chunkSize) <= config.eagerFetchBytes { filesOverQuota.insert(file.path) }
                continue
            }
            budget -= bytes
            track(file)
            fetcher.want(file.missing)
        }
        scheduleChunkFetches()
    }

    /// Wants the missing chunks of the large writes waiting for their content: always, whatever
    /// their size, since they are part of the tree and not files fetched on demand (Protocol.md
    /// §3.7, §8.5).
    func fetchLargeWrites() {
        dispatchPrecondition(condition: .onQueue(queue))
        guard (try? store.hasPendingLargeWrites) == true, let missing = try? store.missingLargeWriteChunks(),
              !missing.isEmpty else { return }
        fetcher.want(missing)
        scheduleChunkFetches()
    }

    /// Folds the large writes whose content is complete now, and tells the observers (the
    /// local API's listeners) about them as about records just stored.
    func applyCompletedLargeWrites() {
        dispatchPrecondition(condition: .onQueue(queue))
        guard (try? store.hasPendingLargeWrites) == true else { return }
        do {
            let applied = try store.applyCompletedLargeWrites()
            guard !applied.isEmpty else { return }
            log("applied \(applied.count) large write\(applied.count == 1 ? "" : "s") whose content arrived")
            notifyObservers(applied)
        } catch {
            log("could not apply large writes: \(error)", level: .error)
        }
    }

    func scheduleChunkFetches() {
        dispatchPrecondition(condition: .onQueue(queue))
        guard fetcher.pendingCount > 0 else { return }
        for (peer, hashes) in fetcher.schedule(now: monotonicSeconds()) {
            guard let slot = sessions[peer] else { continue }
            perform(slot.machine.requestChunks(hashes), on: slot)
        }
    }

    /// Chunk bytes sealed and written per turn of the node's queue when serving a peer.
    static let chunkServePart = 256 << 10

    /// Record bytes read, sealed and written per turn of the node's queue when sending a peer the
    /// records a reconciliation round found it lacks.
    static let recordOfferPart = 1 << 20

    /// Serves what `slot`'s peer is owed, a part per turn of the node's queue, each once the
    /// connection has handed the previous one to the kernel: the records a round found it lacks,
    /// then the chunks it asked for.
    ///
    /// Why: the peer gets the first bytes as soon as one part is sealed instead of after the
    /// whole answer (4 MiB for 64 chunks; every record of the node for a peer that holds none),
    /// so it checks and stores while this side seals; the output never piles up in memory; and
    /// other sessions are served between parts.
    func serveQueued(_ slot: SessionSlot) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard !slot.serving, slot.machine.chunksToServeCount > 0 || slot.machine.recordsToOfferCount > 0 else {
            followUpRound(slot)  // the offers of a round that ended at its cap are all sent
            return
        }
        // Set until the next turn of the queue, which serves the next part if any is left.
        slot.serving = true
        slot.connection.whenDrained { [self] in
            guard sessions[slot.id] === slot else { return }
            let source = StoreSource(node: self)
            perform(slot.machine.serveOffers(from: source, maxBytes: Node.recordOfferPart), on: slot)
            if sessions[slot.id] === slot {
                perform(slot.machine.serveChunks(from: source, maxBytes: Node.chunkServePart), on: slot)
            }
            world.scheduler.async(on: queue) { [self] in
                slot.serving = false
                serveQueued(slot)
            }
        }
    }

    /// A chunk from a peer. It counts as received at once, so the peer's window refills without
    /// waiting; it is checked against its hash and stored beside this queue (`ChunkIntake`),
    /// which reports back to `chunksChecked`. The caller schedules further requests.
    func chunkArrived(_ hash: Digest32, _ bytes: [UInt8], from slot: SessionSlot) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard fetcher.isWanted(hash) else { return }  // late duplicate or unrequested: ignore
        fetcher.received(hash, from: slot.id)
        chunkIntake.add(ArrivedChunk(hash: hash, bytes: bytes, slot: slot))
    }

    /// Files completed by stored chunks are logged (their chunks are durable by now). A chunk
    /// that did not match its hash is wanted again from another peer, and its sender is
    /// disconnected and ignored for a while. If the commit failed the chunks are wanted again.
    func chunksChecked(_ outcome: ChunkIntake.Outcome) {
        dispatchPrecondition(condition: .onQueue(queue))
        for arrival in outcome.bad {
            let peer = arrival.slot.id
            fetcher.want([arrival.hash])
            fetcher.rejected(arrival.hash, from: peer)
            if sessions[peer] === arrival.slot {
                close(arrival.slot, reason: "sent a chunk that does not match its hash", misbehaved: true)
            } else {
                ban(arrival.slot, reason: "sent a chunk that does not match its hash")
            }
        }
        if let failure = outcome.failure {
            log("could not store \(outcome.batch.count) chunks: \(failure)", level: .error)
            fetcher.want(outcome.batch)
        } else {
            for hash in outcome.batch { noteFetched(hash) }
            if !outcome.batch.isEmpty { applyCompletedLargeWrites() }
        }
        scheduleChunkFetches()
    }

    /// Starts counting the chunks fetched for an incomplete file (once per file).
    func track(_ info: FileInfo) {
        guard !info.isComplete, fileFetches[info.path]?.manifestID != info.manifestID else { return }
        fileFetches[info.path] = FileFetch(manifestID: info.manifestID, hashes: Set(info.manifest.chunks),
                                           remaining: Set(info.missing), held: Set(info.manifest.chunks).count - Set(info.missing).count)
    }

    /// Counts a stored chunk against the files being fetched; logs each file that completes.
    func noteFetched(_ hash: Digest32) {
        // Changed in place: a copy taken out of the dictionary would copy its sets on each change.
        for path in Array(fileFetches.keys) where fileFetches[path]?.hashes.contains(hash) == true {
            fileFetches[path]?.fetched += 1
            fileFetches[path]?.remaining.remove(hash)
            if let fetch = fileFetches[path], fetch.remaining.isEmpty {
                fileFetches.removeValue(forKey: path)
                log("fetched \(fetch.fetched) chunks of \(path) (\(fetch.held) were here already)")
            }
        }
    }
}

/// Progress of one file's fetch: every chunk of its manifest, those still missing, and how
/// many arrived since the fetch began (a chunk fetched again would count twice).
struct FileFetch {
    let manifestID: Digest32
    let hashes: Set<Digest32>
    var remaining: Set<Digest32>
    let held: Int
    var fetched = 0
}

/// A chunk as it arrived, before its hash is checked.
struct ArrivedChunk: Sendable {
    let hash: Digest32
    let bytes: [UInt8]
    let slot: SessionSlot
}
