import Crypto
import Dispatch
import Store
import Sync
import Transport
import Wire

/// Sessions: connecting, accepting, feeding bytes to the state machines, carrying out actions.
extension Node {
    func accept(_ connection: any StreamConnection) {
        dispatchPrecondition(condition: .onQueue(queue))
        if isBanned(connection.remoteAddress) || sessions.count >= config.maxSessions {
            connection.close()
            return
        }
        let machine = PeerSession(role: .responder, identity: identity, instance: instance, networkKey: network)
        attach(SessionSlot(id: takeSessionID(), connection: connection, machine: machine, outbound: false, now: monotonicSeconds()))
    }

    func connect(to address: SocketAddress, expected: PublicKey?, manual: Bool) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard running || !manual || sessions.isEmpty else { return }
        guard !isBanned(address), !(expected.map(isBanned) ?? false) else { return }
        if manual { manualRetry[address] = monotonicSeconds() + 1 }
        if let expected {
            // A dial in progress counts as a session, so beacons heard meanwhile dial no more.
            guard dialing.insert(expected).inserted else { return }
        }
        world.network.connect(to: address, timeout: .seconds(5), queue: queue) { [self] result in
            if let expected { dialing.remove(expected) }
            guard running else {
                if case let .success(connection) = result { connection.close() }
                return
            }
            switch result {
            case let .failure(error):
                if !manual { log("could not connect to \(address): \(error)", level: .warning) }
            case let .success(connection):
                var machine = PeerSession(role: .initiator, identity: identity, instance: instance,
                                          networkKey: network, expectedAuthor: expected)
                let slot = SessionSlot(id: takeSessionID(), connection: connection, machine: machine, outbound: true, now: monotonicSeconds())
                if manual { slot.manualAddress = address }
                attach(slot)
                machine = slot.machine
                let actions = slot.machine.start()
                perform(actions, on: slot)
            }
        }
    }

    /// A fresh session id.
    private func takeSessionID() -> Int {
        nextSessionID += 1
        return nextSessionID
    }

    private func attach(_ slot: SessionSlot) {
        let key = slot.id
        sessions[key] = slot
        slot.connection.start(onReadBuffer: { [self] bytes in
            guard let slot = sessions[key] else { return }
            slot.lastActivity = monotonicSeconds()
            if let peer = slot.peer { lastHeard[peer] = wallMillis() }
            let actions = slot.machine.receive(bytes, from: StoreSource(node: self))
            perform(actions, on: slot)
            serveQueued(slot)
            throttle(slot)
        }, onClose: { [self] error in
            guard let slot = sessions[key] else { return }
            forget(slot)
            if slot.established, let peer = slot.peer {
                log("lost \(describe(peer)): session closed\(error.map { " (\($0))" } ?? "")")
            }
        })
        _ = world.scheduler.after(config.handshakeTimeout, on: queue) { [self] in
            if let slot = sessions[key], !slot.established {
                close(slot, reason: "handshake timed out", misbehaved: false)
            }
        }
    }

    /// Carries out a session's actions.
    func perform(_ actions: [PeerSession.Action], on slot: SessionSlot) {
        dispatchPrecondition(condition: .onQueue(queue))
        // Every `.send` here was encrypted before the handlers below run, and a handler may
        // encrypt more for this session (a chunk request, a reconciliation round) and write it
        // at once. Writing these first keeps the bytes in the order of their Noise nonces;
        // otherwise the peer fails to decrypt and drops the session.
        for case let .send(bytes) in actions { slot.connection.write(bytes) }
        // Chunk events change what may be asked of whom: ask once, after all of them.
        var chunkEvents = false
        defer { if chunkEvents { scheduleChunkFetches() } }
        for action in actions {
            switch action {
            case .send:
                break
            case let .established(author, instance, count, _):
                if isBanned(author) {
                    // It broke the protocol before, maybe from another address: not let back in.
                    if slot.outbound { bans.note(slot.connection.remoteAddress, of: author) }
                    close(slot, reason: "banned", misbehaved: false)
                    return
                }
                slot.established = true
                if let other = sessions.values.first(where: { $0 !== slot && $0.established && $0.peer == author }) {
                    // One session per peer. Both ends must drop the same one, so the choice
                    // depends only on the pair: keep the session dialled by the smaller identity.
                    let slotDialer = slot.outbound ? identity.publicKey : author
                    let otherDialer = other.outbound ? identity.publicKey : author
                    let drop = slotDialer == otherDialer ? slot : (slotDialer < otherDialer ? other : slot)
                    forget(drop)  // from the chunk fetcher too, where an established one had joined
                    drop.connection.close()
                    if drop === slot { return }
                }
                log("connected to \(describe(author)) at \(slot.connection.remoteAddress) (\(count) records)")
                slot.peerInstance = instance
                sessionEstablishedForLive(slot)
                fetcher.peerJoined(slot.id)
                scheduleChunkFetches()
                if slot.outbound { startRound(on: slot, now: monotonicSeconds()) }
            case let .received(records):
                slot.recordsReceived += records.count
                ingest(records, from: slot)
            case let .roundComplete(sent, requested):
                if sent > 0 || requested > 0, let peer = slot.peer {
                    log("synced with \(describe(peer)): sent \(sent), requested \(requested) records")
                }
                if slot.machine.roundEndedAtCap { slot.followUpAsked = requested }
            case let .chunkReceived(hash, bytes):
                chunkEvents = true
                chunkArrived(hash, bytes, from: slot)
            case let .chunksMissing(hashes):
                chunkEvents = true
                fetcher.missing(hashes, at: slot.id)
            case let .liveReceived(values):
                receiveLive(values, on: slot)
            case let .close(reason, misbehaved):
                close(slot, reason: reason, misbehaved: misbehaved)
                return
            }
        }
    }

    /// Bytes queued for a peer beyond which its connection is not read until they drain: a peer
    /// that asks and never reads cannot make the node's memory grow.
    public static let maxQueuedBytes = 8 << 20
    /// Chunk requests queued for a peer beyond which its connection is not read until they are
    /// answered, for the same reason (an honest peer has at most 64 in flight).
    static let maxQueuedChunkRequests = 256

    func throttle(_ slot: SessionSlot) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard !slot.readPaused, slot.connection.pendingWriteBytes > Node.maxQueuedBytes
            || slot.machine.chunksToServeCount > Node.maxQueuedChunkRequests else { return }
        slot.readPaused = true
        slot.connection.pauseReading()
        resumeWhenDrained(slot)
    }

    private func resumeWhenDrained(_ slot: SessionSlot) {
        _ = world.scheduler.after(.milliseconds(20), on: queue) { [self] in
            guard sessions[slot.id] != nil, !slot.connection.isClosed else { return }
            if slot.connection.pendingWriteBytes < Node.maxQueuedBytes / 2,
               slot.machine.chunksToServeCount <= Node.maxQueuedChunkRequests / 2 {
                slot.readPaused = false
                if slot.batchesInFlight < Node.maxBatchesInFlight { slot.connection.resumeReading() }
            } else {
                resumeWhenDrained(slot)
            }
        }
    }

    /// Closes a session; one that broke the protocol has its peer banned (`ban`).
    func close(_ slot: SessionSlot, reason: String, misbehaved: Bool) {
        forget(slot)
        slot.connection.close()
        if misbehaved {
            ban(slot, reason: reason)
        } else if slot.established, let peer = slot.peer {
            log("lost \(describe(peer)): \(reason)")
        }
    }

    /// Drops a session that ended, whichever way: from the sessions, from the chunk fetcher, and,
    /// once its peer has no session left, the peer's clock lead (shown for connected peers only;
    /// kept for gone ones, entries would pile up with every identity that ever connected).
    private func forget(_ slot: SessionSlot) {
        sessions.removeValue(forKey: slot.id)
        fetcher.peerLeft(slot.id)
        if let peer = slot.peer, !sessions.values.contains(where: { $0.peer == peer }) {
            clockLead.removeValue(forKey: peer)
            sweepLive()
            notifyLive([presencePath(peer.userID)])
        }
    }

    /// Starts a reconciliation round on `slot`, noting when (see `antiEntropyTick`).
    private func startRound(on slot: SessionSlot, now: Double) {
        slot.roundStartedAt = now
        slot.receivedAtRoundStart = slot.recordsReceived
        slot.followUpAsked = nil
        perform(slot.machine.startRound(source: StoreSource(node: self)), on: slot)
    }

    /// Starts the next round on `slot` at once when the last one ended at its cap (Protocol.md
    /// §8.3) and what it moved is done: as many records as it asked for have arrived here and
    /// are stored, and those it found the peer lacks are sent. Why not wait for a tick: the
    /// tick passes over a session that moved records since the one before, so a cold sync of
    /// a million records sat idle for two to four seconds at each of its caps.
    func followUpRound(_ slot: SessionSlot) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard let asked = slot.followUpAsked, sessions[slot.id] === slot, slot.established, !slot.machine.isReconciling,
              slot.batchesInFlight == 0, slot.machine.recordsToOfferCount == 0,
              slot.recordsReceived - slot.receivedAtRoundStart >= asked else { return }
        startRound(on: slot, now: monotonicSeconds())
    }

    /// Every anti-entropy interval: pick up records written by other processes, reconcile with
    /// one random connected peer among the sessions this node dialled, expire lost peers, close
    /// idle sessions, redial manual peers.
    ///
    /// Only the dialler of a session starts rounds there (Protocol.md §8.3), so two rounds never
    /// cross on one session. A node whose sessions are all inbound starts none, and loses
    /// nothing by it: each of its peers runs rounds on the session it dialled, and a round moves
    /// records both ways.
    ///
    /// A session still moving records is passed over for up to `config.maxRoundDeferral`: a round there
    /// would find the records in flight missing and move them all a second time (during a cold
    /// sync, that doubled the records read, sent and hashed, and stalled the sender's queue
    /// reading them while the receiver ran dry).
    func antiEntropyTick() {
        dispatchPrecondition(condition: .onQueue(queue))
        guard running else { return }
        pickUpLocalWrites()
        let now = monotonicSeconds()
        for slot in sessions.values where now - slot.lastActivity > config.idleTimeoutSeconds {
            close(slot, reason: "idle", misbehaved: false)
        }
        var anyMoving = false
        let candidates = sessions.values.filter { slot in
            let moving = slot.isMovingRecords()  // called for every session: it takes the tick's count
            if moving { anyMoving = true }
            return slot.outbound && slot.established && !slot.machine.isReconciling
                && (!moving || now - slot.roundStartedAt >= config.maxRoundDeferral)
        }
        if !candidates.isEmpty {
            // In id order, so a seeded simulation's choice does not depend on the dictionary's.
            let ordered = candidates.sorted { $0.id < $1.id }
            startRound(on: ordered[world.random.index(below: ordered.count)], now: now)
        }
        expirePeers(now: now)
        bans.prune(now: now)
        // A fetch with chunks wanted and none in flight has stalled on peers that lacked them or
        // timed out: ask them again (they may have fetched the chunks meanwhile), less and less
        // often while nothing arrives.
        if fetcher.pendingCount > 0, fetcher.inFlightCount == 0 { fetcher.forgetLacksAfterStall(now: now) }
        fetchReferencedFiles()
        fetchLargeWrites()
        for address in config.manualPeers where !sessions.values.contains(where: { $0.manualAddress == address }) {
            if isBanned(address) { continue }  // it broke the protocol: not redialled until the ban ends
            if (manualRetry[address] ?? 0) <= now { connect(to: address, expected: nil, manual: true) }
        }
        releaseFreedMemoryWhenQuiet(movingRecords: anyMoving)
    }
}

/// The node's store and record set as a session's `RecordSource`. Used on the node's queue only.
struct StoreSource: RecordSource {
    let node: Node

    func reconciliationItems() -> NegentropySortedItems { node.recordSet.sortedItems() }

    /// Read by (clock, id), the clock from the record set: the store's index leads with it.
    func records(_ ids: [Digest32]) -> [[UInt8]] {
        let set = node.recordSet
        var keys = [(clock: UInt64, id: Digest32)]()
        keys.reserveCapacity(ids.count)
        for id in ids { set.forEachClock(of: id) { keys.append((clock: $0, id: id)) } }
        return (try? node.store.records(withKeys: keys)) ?? []
    }

    func summary() -> (count: UInt64, fingerprint: [UInt8]) {
        (UInt64(node.recordSet.count), node.recordSet.fingerprint)
    }

    func chunk(_ hash: Digest32) -> [UInt8]? { try? node.store.chunk(hash) }

    func withChunk(_ hash: Digest32, _ body: (UnsafeRawBufferPointer) -> Void) -> Bool {
        (try? node.store.withChunk(hash, body)) ?? false
    }
}
