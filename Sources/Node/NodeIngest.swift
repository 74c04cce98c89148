import Crypto
import Dispatch
#if canImport(Glibc)
import Glibc
#endif
import Store
import Sync
import Transport
import Wire

/// Records in: verified in parallel across cores, stored in one transaction per batch, then
/// pushed on to the other peers. Records out: local writes pushed at once.
extension Node {
    /// Decodes and verifies a batch of records, one after another on the calling thread. `nil`
    /// if any record is invalid: a peer that sends one is disconnected, since honest nodes only
    /// relay verified records. `ids` are the encodings' BLAKE2b-256 hashes, worked out already
    /// to drop duplicates, so not again here.
    ///
    /// The cores share the work across batches (`ingest` verifies each on the concurrent
    /// `verifier` queue, with up to `maxBatchesInFlight` of a session at once), not within one:
    /// splitting each batch over the cores made the thread that split it wait for the last
    /// part, and left a core idle 2 to 3% of a cold sync (1% without).
    ///
    /// Sealed writes of an epoch whose key `keys` holds are opened there too, beside their
    /// signature check: opening is as pure, and on the node's queue it would run one record at
    /// a time. `opened` has an entry per record (nil for the others), or is nil when none was.
    static func verify(_ encodings: [[UInt8]], ids: [Digest32], keys: SealedWriteKeys = .none)
        -> (records: [Record], opened: [OpenedSealedWrite?]?)? {
        precondition(ids.count == encodings.count, "one id per encoding")
        var records = [Record]()
        records.reserveCapacity(encodings.count)
        var opened: [OpenedSealedWrite?]?
        for i in encodings.indices {
            // One invalid record condemns the batch: the rest need no signature check.
            guard let record = try? Record.decode(encodings[i], hashedAs: ids[i]) else { return nil }
            if !keys.isEmpty, let opening = keys.open(record) {
                if opened == nil { opened = [OpenedSealedWrite?](repeating: nil, count: encodings.count) }
                opened![i] = opening
            }
            records.append(record)
        }
        return (records, opened)
    }

    /// Verifies records off the node's queue, so the next batch is verified while this one is
    /// stored; then stores them on the queue. A session with too many batches in flight stops
    /// being read until they are stored (backpressure instead of unbounded memory).
    ///
    /// Records already held, or already on their way in (from another session, or an earlier
    /// batch of this one), are dropped first: an id is the hash of the bytes, so they are the
    /// same bytes, and a signature costs far more than the hash. (Should the batch carrying the
    /// first copy be refused, reconciliation offers the record again.)
    func ingest(_ encodings: [[UInt8]], from slot: SessionSlot) {
        dispatchPrecondition(condition: .onQueue(queue))
        var fresh = [[UInt8]]()
        var ids = [Digest32]()
        fresh.reserveCapacity(encodings.count)
        ids.reserveCapacity(encodings.count)
        for bytes in encodings {
            let id = BLAKE2b.digest256(bytes)
            guard !holds(id), arriving.insert(id).inserted else { continue }
            fresh.append(bytes)
            ids.append(id)
        }
        guard !fresh.isEmpty else { return }
        slot.batchesInFlight += 1
        if slot.batchesInFlight == Node.maxBatchesInFlight { slot.connection.pauseReading() }
        let batch = UncheckedSendable(fresh)
        let batchIDs = ids
        // The keys held now: a key arriving meanwhile opens the writes it concerns on the queue.
        let keys = store.sealedWriteKeys()
        verifying += 1
        world.scheduler.async(on: Node.verifier) { [self] in
            let records = Node.verify(batch.value, ids: batchIDs, keys: keys).map(UncheckedSendable.init)
            world.scheduler.async(on: queue) { [self] in
                verifying -= 1
                guard let records else {
                    if !verified.isEmpty { scheduleStore() }  // what waited for this batch waits no longer
                    for id in batchIDs { arriving.remove(id) }
                    batchStored(by: slot)
                    if sessions[slot.id] != nil { close(slot, reason: "sent an invalid record", misbehaved: true) }
                    return
                }
                // A session that ended meanwhile keeps no lead (its peer may have none left).
                if sessions[slot.id] != nil { noteClockLead(records.value.records, from: slot) }
                verified.append((records.value.records, records.value.opened, slot, batchIDs))
                scheduleStore()
            }
        }
    }

    /// Batches a session may have between receipt and storage before its reading pauses. Enough
    /// that verification still has batches to work on while the queue stores earlier ones.
    public static let maxBatchesInFlight = 12
    /// Records stored in one turn of the queue (whole batches, at least one). Batches verified
    /// while more are being verified wait to make up half of it (`storeVerified`).
    static let maxRecordsPerStore = 8192
    /// Where signatures are checked: a concurrent queue, so verification runs beside storing.
    static let verifier = DispatchQueue(label: "lanchat.verify", qos: .userInitiated, attributes: .concurrent)

    private func scheduleStore() {
        guard !storeScheduled else { return }
        storeScheduled = true
        world.scheduler.async(on: queue) { [self] in storeVerified() }
    }

    /// Stores the verified batches waiting, in one transaction (one commit, one fsync), then
    /// lets their sessions be read again. Batches verified while the queue was busy, or while
    /// others were still being verified, are stored together, up to `maxRecordsPerStore`; the
    /// rest wait for the next turn, so that reads (more records to verify) are not held up
    /// behind one long transaction while the verifier runs dry.
    func storeVerified() {
        dispatchPrecondition(condition: .onQueue(queue))
        let cpuStart = Node.threadCPUSeconds()
        defer { storingCPU += Node.threadCPUSeconds() - cpuStart }
        storeScheduled = false
        // While more batches are being verified, the ones verified wait for them, up to half a
        // full transaction: a commit writes each page it touched to the WAL, and the records of
        // a batch land in many conversations, so a transaction of one batch touches nearly as
        // many pages as one of several. Not longer: batches waiting here count against their
        // session's batches in flight, and a session paused on them leaves the verifiers idle.
        // Nothing waits for a batch that is not coming: the last one back from the verifiers,
        // valid or not, schedules the store.
        if verifying > 0, verified.reduce(0, { $0 + $1.records.count }) < Node.maxRecordsPerStore / 2 { return }
        var count = 0
        var taken = 0
        while taken < verified.count, taken == 0 || count + verified[taken].records.count <= Node.maxRecordsPerStore {
            count += verified[taken].records.count
            taken += 1
        }
        let waiting = verified[..<taken]
        verified.removeFirst(taken)
        if !verified.isEmpty { scheduleStore() }
        store(waiting.filter { sessions[$0.slot.id] != nil }.map { (records: $0.records, opened: $0.opened, slot: Optional($0.slot)) })
        for batch in waiting {
            for id in batch.ids { arriving.remove(id) }
            batchStored(by: batch.slot)
        }
        var followed = Set<Int>()
        for batch in waiting where followed.insert(batch.slot.id).inserted { followUpRound(batch.slot) }
    }

    /// CPU seconds the queue has spent storing received batches: benchmarks set it beside the
    /// process's CPU time, to tell the serial part of a sync from the part spread over the cores.
    public var storingCPUSeconds: Double { queue.sync { storingCPU } }

    /// CPU time of the calling thread.
    static func threadCPUSeconds() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }

    private func batchStored(by slot: SessionSlot) {
        slot.batchesInFlight -= 1
        if slot.batchesInFlight == Node.maxBatchesInFlight - 1, !slot.connection.isClosed, !slot.readPaused { slot.connection.resumeReading() }
    }

    /// Stores verified records and relays the new ones to every other session.
    func store(_ records: [Record], from slot: SessionSlot?) {
        store([(records, nil, slot)])
    }

    /// Stores batches of verified records in one transaction, and relays each batch's new
    /// records to every session but the one it came from. A batch's `opened` holds its sealed
    /// writes opened off the queue (`Node.verify`), if any were.
    func store(_ batches: [(records: [Record], opened: [OpenedSealedWrite?]?, slot: SessionSlot?)]) {
        let records = batches.count == 1 ? batches[0].records : batches.flatMap(\.records)
        guard !records.isEmpty else { return }
        // One entry per record across the batches, or none when no batch opened any.
        let opened: [OpenedSealedWrite?]? = batches.allSatisfy({ $0.opened == nil }) ? nil
            : batches.flatMap { $0.opened ?? [OpenedSealedWrite?](repeating: nil, count: $0.records.count) }
        let report: IngestReport
        do {
            report = try store.ingest(records, opened: opened, nowMillis: wallMillis())
        } catch {
            // The records are not in the record set, so reconciliation offers them again: the node
            // goes on, and stores them once the disk takes writes again. One line per failure,
            // not one per batch of every round.
            let failure = "\(error)"
            if failure != storeFailure {
                log("could not store records: \(failure) (peers offer them again until they are stored)", level: .error)
            }
            storeFailure = failure
            return
        }
        if let failure = storeFailure {
            storeFailure = nil
            log("the store takes records again, after: \(failure)")
        }
        defer { armKeyTrialTimer() }
        guard report.added > 0 else { return }
        // During a cold sync every record is new: the same array, not a copy of each record.
        let added = report.addedIndices.count == records.count ? records : report.addedIndices.map { records[$0] }
        for record in added { recordSet.insert(clock: record.clock, id: record.id) }
        storedHere.formUnion(report.addedSequences)
        // Positions in `records` run batch after batch; `addedIndices` is ascending.
        var position = 0, offset = 0
        for (batch, _, slot) in batches {
            let start = position
            while position < added.count, report.addedIndices[position] < offset + batch.count { position += 1 }
            offset += batch.count
            let fresh = added[start..<position]
            if fresh.isEmpty { continue }
            if let slot, let peer = slot.peer, slot.machine.isReconciling == false, fresh.count > 1 {
                log("received \(fresh.count) records from \(describe(peer))")
            }
            // Only with another session to send them to (a cold sync has one peer).
            if sessions.values.contains(where: { $0 !== slot && $0.established }) { relay(fresh.map(\.encoded), except: slot) }
        }
        notifyObservers(added)
        announceOpenedKeyRecords(except: added)
        if added.contains(where: Node.mayReferenceFiles) {
            fetchReferencedFiles(paths: (try? store.filePaths(touchedBy: added)) ?? [])
        }
        if added.contains(where: { $0.kind == .largeWrite }) { fetchLargeWrites() }
        rekeyAfterLeaves(added)
    }

    /// A member left a group this node's user created: a new epoch without them, so what is
    /// sent from now on is sealed under a key the leaver never holds (Protocol.md §11.5).
    func rekeyAfterLeaves(_ records: [Record]) {
        dispatchPrecondition(condition: .onQueue(queue))
        var done = Set<String>()
        for record in records {
            guard case let .leave(body) = record.body, done.insert(body.conversation).inserted,
                  (try? store.epochOutlivesLeaves(body.conversation, creator: identity.publicKey)) == true else { continue }
            do {
                try store.changeMembers(body.conversation, adding: [], removing: [], signer: identity, nowMillis: wallMillis())
                log("a new key for \(body.conversation): \(record.author.userID) left")
            } catch {
                log("could not make a new key for \(body.conversation) after a member left: \(error)", level: .error)
            }
        }
        if !done.isEmpty { pickUpLocalWrites() }
    }

    /// Whether a record may make a referenced file appear: a file entry or manifest, or a write
    /// that sets a message's `photoURL` or a profile's `picture`.
    static func mayReferenceFiles(_ record: Record) -> Bool {
        if case .largeWrite = record.body { return false }
        guard case let .write(pairs) = record.body else { return true }
        return pairs.contains { pair in
            if pair.path.key == "photoURL" || pair.path.key == "picture" { return true }
            return pair.member("photoURL") != nil || pair.member("picture") != nil
        }
    }

    /// Pushes records to every established session but `source`, except to a peer that has
    /// `maxQueuedBytes` waiting for it already: a peer that stops reading must not make the
    /// node's memory grow with every record that arrives meanwhile. What it misses is not lost:
    /// its next reconciliation round finds it.
    func relay(_ encodings: [[UInt8]], except source: SessionSlot?) {
        for other in sessions.values where other !== source && other.established
            && other.connection.pendingWriteBytes <= Node.maxQueuedBytes {
            perform(other.machine.push(encodings), on: other)
        }
    }

    /// Records written into the store by another process (the CLI while this node runs):
    /// add them to the set and push them at once, by session and, when small, by datagram.
    public func pickUpLocalWritesNow() {
        world.scheduler.async(on: queue) { [self] in pickUpLocalWrites() }
    }

    /// Whether the record is held: the record set's answer, confirmed by the store when it is
    /// "maybe" (`RecordSet.clocks(of:)`), one index probe per clock it names (nearly always one).
    func holds(_ id: Digest32) -> Bool {
        recordSet.clocks(of: id).contains { (try? store.hasRecord(id, clock: $0)) ?? false }
    }

    func pickUpLocalWrites() {
        dispatchPrecondition(condition: .onQueue(queue))
        var encodings = [[UInt8]]()
        var records = [Record]()
        // The run of sequences right after the last handled that this node stored itself is
        // passed over without reading it back: during a cold sync that run is every record, and
        // reading each one's bytes again (only to skip it) cost the node's queue a second pass
        // over the whole set. A gap, or another process's record, ends the run; the query below
        // handles the rest.
        while storedHere.remove(handledSequence + 1) != nil { handledSequence += 1 }
        while let fresh = try? store.records(after: handledSequence), !fresh.isEmpty {
            for (sequence, _, bytes) in fresh {
                handledSequence = max(handledSequence, sequence)
                // Records this node stored itself are known already; only other processes' are new.
                guard storedHere.remove(sequence) == nil, let record = try? Record.decode(bytes, verify: false) else { continue }
                recordSet.insert(clock: record.clock, id: record.id)
                encodings.append(bytes)
                records.append(record)
            }
        }
        guard !encodings.isEmpty else { return }
        try? store.privateRecordsStoredElsewhere(records)
        notifyObservers(records)
        announceOpenedKeyRecords(except: records)
        armKeyTrialTimer()
        if records.contains(where: Node.mayReferenceFiles) {
            fetchReferencedFiles(paths: (try? store.filePaths(touchedBy: records)) ?? [])
        }
        relay(encodings, except: nil)
        for bytes in encodings where bytes.count <= config.datagramRecordBytes {
            let datagram = Datagram.push(bytes).seal(key: datagramKey)
            for peer in discovered.values { try? sessionSocket(for: peer.address)?.send(datagram, to: peer.address) }
        }
    }

    /// A sealed datagram on the session port: a pushed record.
    func receiveDatagram(_ bytes: [UInt8], from address: SocketAddress) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard !isBanned(address), let datagram = Datagram.open(bytes, key: datagramKey) else { return }
        switch datagram {
        case let .push(encoding):
            guard let record = try? Record.decode(encoding) else { return }
            store([record], from: nil)
        case let .live(encoding):
            receiveLive([encoding], on: nil)
        case .beacon:
            return
        }
    }
}
