import Crypto
import Dispatch
import Private
import Store
import Sync
import Tree
import Wire

/// Live state (Protocol.md §5.7, §7, §8.2): typing flags, statuses and read receipts that
/// travel signed beside the records and are never stored as records, and the presence the
/// node derives from who it hears.
///
/// A typing flag or status lives as long as its writer's node is *live* here: heard in its
/// beacons (the same instance), or, for a peer known only by a manual session, while that
/// session is open. So it vanishes on every node when the writer clears it, when its node
/// stops (it clears its values first) and when its node is lost (three beacon intervals).
/// Nodes relay the values they take on their sessions, so one that never hears the writer
/// (nodes chained by `--peer`) shows them too: relayed, a value lasts three beacon intervals
/// unless a newer one renews it, and its writer renews its values every interval.
extension Node {
    /// Why a live write through the API was refused.
    public enum LiveWriteError: Error, Equatable, CustomStringConvertible {
        /// The path names another user (or is derived presence).
        case permissionDenied
        /// Over a limit (size, count, rate): the reason.
        case refused(String)

        public var description: String {
            switch self {
            case .permissionDenied: return "Permission denied"
            case let .refused(why): return why
            }
        }
    }

    // MARK: Writing

    /// Sets (or with null, clears) this node's user's live value at `path`, shows it here and
    /// sends it at once to every live peer, as a datagram and on every session. Call on the queue.
    public func setLive(_ path: Path, to value: JSONValue) throws {
        dispatchPrecondition(condition: .onQueue(queue))
        guard let (_, owner) = LivePaths.classify(path), owner == userID else { throw LiveWriteError.permissionDenied }
        let normalized = try value.normalized(at: path)
        liveVersion = max(liveVersion + 1, wallMillis() << 10)
        let signed = try signLive(path, normalized, version: liveVersion)
        switch live.offer(signed, instanceLive: true, now: monotonicSeconds()) {
        case let .refused(why): throw LiveWriteError.refused(why)
        case let .changed(changed):
            liveTaken(signed, local: true)
            notifyLive([changed] + presencePaths(for: signed))
        case .unchanged:
            liveTaken(signed, local: true)
        }
        sendLive([signed.encoded()])
    }

    /// This node's user's live value, signed; in a private conversation, sealed under its
    /// current epoch key (§11.8), and refused unless the user is one of its members.
    func signLive(_ path: Path, _ value: JSONValue, version: UInt64) throws -> LiveValue {
        let plain: LiveValue
        do {
            plain = try LiveValue.signed(by: identity, instance: instance, version: version, path: path, value: value)
        } catch let error as LiveValueError {
            throw LiveWriteError.refused("\(error)")
        }
        guard let conversation = plain.privateConversation else { return plain }
        guard let (epoch, key) = store.liveSealingKey(conversation) else { throw LiveWriteError.permissionDenied }
        return try LiveSealing.seal(plain, by: identity, epoch: epoch, key: key)
    }

    /// Sends encoded live values on every session and as one datagram each to every live peer,
    /// or with `datagramsToConnected` false only to the live peers without a session (a renewal
    /// need not reach a peer twice; a new value goes both ways, the quickest first).
    func sendLive(_ encodings: [[UInt8]], datagramsToConnected: Bool = true) {
        dispatchPrecondition(condition: .onQueue(queue))
        let connected = datagramsToConnected ? [] : Set(sessions.values.compactMap { $0.established ? $0.peer : nil })
        for encoding in encodings {
            let datagram = Datagram.live(encoding).seal(key: datagramKey)
            for peer in discovered.values where !connected.contains(peer.author) {
                try? sessionSocket(for: peer.address)?.send(datagram, to: peer.address)
            }
        }
        for slot in sessions.values where slot.established { perform(slot.machine.sendLive(encodings), on: slot) }
    }

    /// Clears every typing flag and status of this node's user, here and at its peers (the node stops).
    func clearOwnLiveValues() {
        dispatchPrecondition(condition: .onQueue(queue))
        for value in live.values(of: identity.publicKey) { try? setLive(value.path, to: .null) }
    }

    // MARK: Receiving

    /// Live values from a datagram (`slot` nil) or a session: each decoded, verified and offered.
    func receiveLive(_ encodings: [[UInt8]], on slot: SessionSlot?, arrived: Double? = nil) {
        dispatchPrecondition(condition: .onQueue(queue))
        var changed = [Path]()
        var relay = [(author: PublicKey, encoding: [UInt8])]()
        var readMarks = [String]()
        let now = monotonicSeconds()
        var opaque = [(author: PublicKey, encoding: [UInt8])]()
        var tookRelayed = false
        for encoding in encodings {
            guard let message = try? LiveMessage.decode(encoding) else { continue }
            let value: LiveValue
            switch message {
            case let .plain(plain):
                value = plain
            case let .sealed(sealed):
                guard sealed.author != identity.publicKey || sealed.instance != instance, !isBanned(sealed.author) else { continue }
                guard let opened = openSealedLive(sealed, now: now, arrived: arrived, on: slot) else {
                    // Not ours to read (or not yet): relayed once all the same, so members reachable
                    // only through this node see it (§11.8).
                    if sealedRelay.admit(sealed, now: now) { opaque.append((sealed.author, encoding)) }
                    continue
                }
                sealedRelay.note(sealed)
                value = opened
            }
            guard value.author != identity.publicKey || value.instance != instance,
                  !isBanned(value.author), let kind = LivePaths.classify(value.path)?.kind else { continue }
            let instanceLive = isLive(value.author, instance: value.instance)
            // A peer relays a typing flag or status whose writer's node is not live here at all (§5.7).
            let relayedFor = !instanceLive && kind != .receipt && slot != nil && !isLive(value.author) && relayable(value)
                ? relayedLiveSeconds : nil
            if instanceLive || relayedFor != nil { changed += live.keep(value.author, instance: value.instance) }
            if relayedFor != nil {
                tookRelayed = true
                // Heard, through a relay: online while its values are (§5.7), then last seen now.
                if !live.relayed(value.author, now: now) { changed.append(presencePath(value.author.userID)) }
                lastHeard[value.author] = wallMillis()
            }
            switch live.offer(value, instanceLive: instanceLive, relayedFor: relayedFor, now: now) {
            case let .changed(path):
                changed.append(path)
                changed += presencePaths(for: value)
                if let moved = liveTaken(value) { readMarks.append(moved) }
                relay.append((value.author, encoding))
            case .unchanged:
                if let moved = liveTaken(value) { readMarks.append(moved) }
                // A typing flag or status renewed (`refreshOwnLive`) goes on too: that keeps it
                // shown where it is relayed. A new receipt of the same message need not.
                if kind != .receipt { relay.append((value.author, encoding)) }
            case .refused:
                break
            }
        }
        // A value taken goes on to the peers connected here (but not back), so it reaches nodes
        // that its writer's node never meets (Protocol.md §8.2); each node takes a value once
        // (its version), so it goes on from each node once.
        relay += opaque
        if !relay.isEmpty {
            for other in sessions.values where other.established && other !== slot {
                let encodings = relay.filter { $0.author != other.peer }.map(\.encoding)
                if !encodings.isEmpty { perform(other.machine.sendLive(encodings), on: other) }
            }
        }
        notifyLive(changed, readMarksMoved: readMarks)
        if tookRelayed { armLivenessTimer() }
    }

    /// A sealed live value opened, if this node's user may read it (§11.8). One whose epoch's key
    /// record has not arrived yet waits (at most `pendingSealedSeconds`, `maxPendingSealed` of
    /// them), and is opened within a beat of the record's arrival.
    func openSealedLive(_ sealed: SealedLive, now: Double, arrived: Double? = nil, on slot: SessionSlot? = nil) -> LiveValue? {
        switch store.openLive(sealed) {
        case let .opened(value):
            return value
        case .epochUnknown:
            if pendingSealed.count >= Node.maxPendingSealed { pendingSealed.removeFirst() }
            pendingSealed.append((sealed, arrived ?? now, slot?.id))
            return nil
        case .closed:
            return nil
        }
    }

    /// How long a sealed live value waits for its epoch's key record, and how many wait.
    static let pendingSealedSeconds = 30.0
    static let maxPendingSealed = 256

    /// Opens the sealed values waiting for their key records that have arrived since.
    func retryPendingSealed(now: Double) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard !pendingSealed.isEmpty else { return }
        let waiting = pendingSealed.filter { now - $0.arrived < Node.pendingSealedSeconds }
        pendingSealed = []
        for entry in waiting {
            receiveLive([entry.value.encoded()], on: entry.slot.flatMap { sessions[$0] }, arrived: entry.arrived)
        }
    }

    /// Drops the values of private conversations this node's user no longer reads (it was
    /// removed, or left), and those of authors who are no longer members there.
    func dropUnreadablePrivateLive() -> [Path] {
        // Values are checked as they are opened: only a change of membership since can make one
        // unreadable.
        guard store.membershipGeneration != liveCheckedGeneration else { return [] }
        liveCheckedGeneration = store.membershipGeneration
        guard live.hasPrivateValues else { return [] }
        var readable = [String: Bool]()
        let gone = live.forget { value in
            guard let conversation = value.privateConversation else { return false }
            if readable[conversation] == nil { readable[conversation] = store.mayReadLive(of: conversation) }
            return readable[conversation] == false || !store.mayWriteLive(value.author, in: conversation)
        }
        for path in gone where LivePaths.classify(path)?.kind == .receipt { receiptsToKeep.insert(path) }
        return gone
    }

    /// How long a relayed typing flag or status is shown when nothing renews it: three beacon
    /// intervals (6 s), as long as a lost peer's values last. Its writer renews it every interval.
    var relayedLiveSeconds: Double { 3 * config.beaconInterval.seconds }

    /// Whether a typing flag or status from an author whose node is not live here may be taken as
    /// relayed: its version, its writer's wall clock × 1024 (§7), is no older than the time a
    /// relayed value is shown plus `maxLiveClockSkewSeconds`. So a replay of an old value, once
    /// it has expired, is not shown again; a writer whose clock is behind by more is seen only
    /// by the nodes that hear it directly.
    private func relayable(_ value: LiveValue) -> Bool {
        let written = Double(value.version >> 10) / 1000
        return written >= Double(wallMillis()) / 1000 - relayedLiveSeconds - Node.maxLiveClockSkewSeconds
    }

    /// How far behind a writer's wall clock may be for its relayed values to be taken.
    static let maxLiveClockSkewSeconds = 10.0

    /// Sends this node's typing flags and statuses again, newly signed, on every session, and as
    /// a datagram to each live peer without one: the new version renews them where they are shown
    /// relayed (§5.7), gives them back to a peer that lost this node for a moment (late beacons)
    /// and dropped them, and changes nothing elsewhere. Every beacon interval, while the node
    /// holds any; a peer with a session gets them once, not twice.
    func refreshOwnLive() {
        dispatchPrecondition(condition: .onQueue(queue))
        let own = live.values(of: identity.publicKey)
        guard !own.isEmpty, !discovered.isEmpty || sessions.values.contains(where: { $0.established }) else { return }
        var encodings = [[UInt8]]()
        for value in own {
            liveVersion = max(liveVersion + 1, wallMillis() << 10)
            // Sealed again under the current epoch: a member removed since reads none of it.
            guard let renewed = try? signLive(value.path, value.value, version: liveVersion),
                  case .unchanged = live.offer(renewed, instanceLive: true, now: monotonicSeconds()) else { continue }
            encodings.append(renewed.encoded())
        }
        guard !encodings.isEmpty else { return }
        sendLive(encodings, datagramsToConnected: false)
    }

    /// After a value was taken: a receipt is kept on disk (within a second), and one of this
    /// node's own user from another of its nodes moves the local read mark; returns the
    /// conversation whose read mark moved.
    @discardableResult
    private func liveTaken(_ value: LiveValue, local: Bool = false) -> String? {
        guard LivePaths.classify(value.path)?.kind == .receipt else { return nil }
        receiptsToKeep.insert(value.path)
        guard !local, value.author == identity.publicKey, case let .string(key) = value.value,
              let conversation = value.path.segments.dropFirst().first,
              (try? store.markRead(conversation, upTo: key)) == true else { return nil }
        return conversation
    }

    /// Whether `author`'s node, as `instance`, is live here (see the extension's comment).
    func isLive(_ author: PublicKey, instance: [UInt8]) -> Bool {
        if author == identity.publicKey { return instance == self.instance }
        if let peer = discovered[author] { return peer.instance == instance }
        return sessions.values.contains { $0.established && $0.peer == author && $0.peerInstance == instance && $0.manualAddress != nil }
            || sessions.values.contains { $0.established && $0.peer == author && $0.peerInstance == instance && !config.discovery }
    }

    /// Whether `author`'s node is live here as any instance.
    func isLive(_ author: PublicKey) -> Bool {
        if author == identity.publicKey || discovered[author] != nil { return true }
        return sessions.values.contains { $0.established && $0.peer == author && ($0.manualAddress != nil || !config.discovery) }
    }

    /// A beacon of a new node or instance: an earlier instance's values go.
    func peerHeardForLive(_ author: PublicKey, instance: [UInt8]) {
        dispatchPrecondition(condition: .onQueue(queue))
        var changed = live.keep(author, instance: instance)
        changed.append(presencePath(author.userID))
        notifyLive(changed)
    }

    /// Drops the typing flags and statuses of every author no longer live (a lost peer, a closed session).
    func sweepLive() {
        dispatchPrecondition(condition: .onQueue(queue))
        var changed = [Path]()
        let now = monotonicSeconds()
        for author in live.ephemeralAuthors where !isLive(author) && !live.relayed(author, now: now) {
            changed += live.forget(author)
            changed.append(presencePath(author.userID))
        }
        changed += dropUnreadablePrivateLive()
        notifyLive(changed)
        retryPendingSealed(now: now)
    }

    /// A session came up: the peer gets this node's typing flags and statuses, and every receipt held.
    func sessionEstablishedForLive(_ slot: SessionSlot) {
        dispatchPrecondition(condition: .onQueue(queue))
        let own = live.values(of: identity.publicKey).map { $0.encoded() }
        let receipts = live.receipts.values.map { $0.encoded() }
        perform(slot.machine.sendLive(own + receipts), on: slot)
        if let peer = slot.peer { notifyLive([presencePath(peer.userID)]) }
    }

    // MARK: Presence

    func presencePath(_ user: String) -> Path {
        (try? Path(segments: [LivePaths.presenceRoot, user])) ?? Path.root
    }

    private func presencePaths(for value: LiveValue) -> [Path] {
        LivePaths.classify(value.path)?.kind == .status ? [presencePath(value.author.userID)] : []
    }

    /// Each known user's presence, as shown at `/presence/$uid`: `{"state": "online"}`,
    /// `{"state": "away"}` or `{"state": "offline", "lastSeen": MILLIS}`.
    public func presenceEntriesOnQueue() -> [(Path, JSONValue)] {
        dispatchPrecondition(condition: .onQueue(queue))
        var out = [(Path, JSONValue)]()
        for (user, entry) in presenceOnQueue() {
            var fields: [String: JSONValue] = ["state": .string(entry.state)]
            if entry.state == "offline", let seen = entry.lastSeen { fields["lastSeen"] = .number(Double(seen)) }
            out.append((presencePath(user), .object(fields)))
        }
        return out
    }

    /// Who is online, away or offline, and when each offline user was last seen (kept across
    /// restarts), by user id.
    public func presenceOnQueue() -> [String: (state: String, online: Bool, lastSeen: Int64?)] {
        dispatchPrecondition(condition: .onQueue(queue))
        var result = [String: (state: String, online: Bool, lastSeen: Int64?)]()
        for (user, millis) in lastSeenKept { result[user] = ("offline", false, millis) }
        for (author, millis) in lastHeard {
            let seen = max(Int64(millis), lastSeenKept[author.userID] ?? 0)
            result[author.userID] = ("offline", false, seen)
        }
        var live = Set(discovered.keys)
        for slot in sessions.values where slot.established { if let peer = slot.peer { live.insert(peer) } }
        // An author heard only through a relay (nodes chained by `--peer`) is online while the
        // values it renews are held here.
        let now = monotonicSeconds()
        for author in self.live.ephemeralAuthors where self.live.relayed(author, now: now) { live.insert(author) }
        for author in live {
            let away = self.live.values(of: author).contains { $0.path.segments.count == 3 && $0.path.segments[2] == "away" && $0.value == .bool(true) }
            result[author.userID] = (away ? "away" : "online", true, Int64(lastHeard[author] ?? wallMillis()))
        }
        let idle = monotonicSeconds() - lastLocalActivity > config.awayAfterSeconds
        result[userID] = (idle ? "away" : "online", true, Int64(wallMillis()))
        return result
    }

    /// The local API was used: the user is not away (any more).
    public func noteLocalActivityOnQueue() {
        dispatchPrecondition(condition: .onQueue(queue))
        lastLocalActivity = monotonicSeconds()
        if awayPublished { updateAway() }
    }

    /// Publishes or clears `/status/$uid/away` as the user's idleness says.
    func updateAway() {
        let idle = monotonicSeconds() - lastLocalActivity > config.awayAfterSeconds
        guard idle != awayPublished, let path = try? Path(segments: ["status", userID, "away"]) else { return }
        awayPublished = idle
        try? setLive(path, to: idle ? .bool(true) : .null)
        notifyLive([presencePath(userID)])
    }

    // MARK: Timers, observers, keeping

    /// Arms a one-shot timer at the next moment something live expires: a discovered peer three
    /// beacon intervals after its last beacon (and with it its typing flags and statuses), or a
    /// relayed author's values (§5.7). So they go at that moment, not up to a polling beat later.
    ///
    /// A timer is allowed a leeway of a tenth of its delay (`TimerLeeway`), which for 6 s would
    /// be 0.6 s late; so it is armed at nine tenths of the time left, and again from there, and
    /// fires within a millisecond of the deadline after a few short hops. A check armed for an
    /// earlier moment is kept: it arms the next one when it fires.
    func armLivenessTimer() {
        dispatchPrecondition(condition: .onQueue(queue))
        guard running else { return }
        let now = monotonicSeconds()
        let limit = 3 * config.beaconInterval.seconds
        // Only deadlines still ahead: one passed was dealt with before this call (or, past by a
        // rounding, is left to the beat), so the timer never spins at zero delay.
        let deadlines = discovered.values.map { $0.lastSeen + limit }.filter { $0 > now } + [live.nextRelayedExpiry(after: now)].compactMap { $0 }
        guard let deadline = deadlines.min() else { return }
        if livenessTimer != nil, let armed = livenessDeadline, armed <= deadline { return }
        livenessTimer?.cancel()
        livenessDeadline = deadline
        let left = max(0, deadline - now)
        let hop = max(0.001, left > 0.01 ? left * 0.9 : left)
        livenessTimer = world.scheduler.after(.nanoseconds(Int(hop * 1e9)), on: queue) { [self] in
            livenessTimer = nil
            livenessDeadline = nil
            guard running else { return }
            expirePeers(now: monotonicSeconds())
            sweepLive()
            armLivenessTimer()
        }
    }

    func startLiveTimers() {
        dispatchPrecondition(condition: .onQueue(queue))
        // Peers and relayed values expire at their moment (`armLivenessTimer`); this beat also
        // drops what membership no longer lets this node show, retries sealed values waiting
        // for their key records, and publishes idleness.
        let beat = DispatchTimeInterval.milliseconds(max(50, Int(config.beaconInterval.seconds * 250)))
        timers.append(world.scheduler.every(beat, on: queue) { [self] in
            guard running else { return }
            expirePeers(now: monotonicSeconds())
            sweepLive()
            updateAway()
        })
        armLivenessTimer()
        let refresh = DispatchTimeInterval.milliseconds(max(50, Int(config.beaconInterval.seconds * 1000)))
        timers.append(world.scheduler.every(refresh, on: queue) { [self] in
            guard running else { return }
            refreshOwnLive()
        })
        timers.append(world.scheduler.every(.seconds(1), on: queue) { [self] in keepLiveState() })
    }

    /// Reads the receipts and last-seen times kept by an earlier run.
    func loadLiveState() {
        guard let liveStore else { return }
        for encoding in (try? liveStore.receipts()) ?? [] {
            let value: LiveValue
            switch try? LiveMessage.decode(encoding) {
            case let .plain(plain)?: value = plain
            case let .sealed(sealed)?:
                // Kept sealed; shown again only while this node's user is still a member.
                guard case let .opened(opened) = store.openLive(sealed) else { continue }
                value = opened
            case nil: continue
            }
            _ = live.offer(value, instanceLive: false, now: 0)
            liveVersion = max(liveVersion, value.author == identity.publicKey ? value.version : 0)
        }
        lastSeenKept = (try? liveStore.lastSeen()) ?? [:]
    }

    /// Writes changed receipts and last-seen times to the live-state file: once a second at most,
    /// so a flood of receipts costs one transaction a second.
    func keepLiveState() {
        guard let liveStore else { return }
        for path in receiptsToKeep {
            if let value = live.receipt(at: path) {
                try? liveStore.putReceipt(path: path.description, version: value.version, signed: value.encoded())
            } else {
                try? liveStore.deleteReceipt(path: path.description)
            }
        }
        receiptsToKeep.removeAll()
        // A live peer's time is written every 30 s, a lost one's at once: a crash of this node
        // loses at most 30 s of a last seen, and a second costs no write when nothing was lost.
        var seen = [String: Int64]()
        for (author, millis) in lastHeard where seen.count < LiveStore.maxLastSeen {
            let kept = lastSeenKept[author.userID] ?? 0
            if Int64(millis) > kept && (Int64(millis) - kept >= 30_000 || !isLive(author)) { seen[author.userID] = Int64(millis) }
        }
        try? liveStore.putLastSeen(seen)
        for (user, millis) in seen { lastSeenKept[user] = max(lastSeenKept[user] ?? 0, millis) }
    }

    /// Calls `observer` on the node's queue with the paths where live values or presence changed,
    /// and the conversations whose read mark a receipt from another of the user's nodes moved.
    @discardableResult
    public func addLiveObserver(_ observer: @escaping ([Path], [String]) -> Void) -> Int {
        queue.sync {
            nextObserverID += 1
            liveObservers[nextObserverID] = observer
            return nextObserverID
        }
    }

    public func removeLiveObserver(_ token: Int) {
        world.scheduler.async(on: queue) { [self] in liveObservers.removeValue(forKey: token) }
    }

    func notifyLive(_ paths: [Path], readMarksMoved: [String] = []) {
        guard !paths.isEmpty || !readMarksMoved.isEmpty else { return }
        var seen = Set<Path>()
        let unique = paths.filter { seen.insert($0).inserted }
        for observer in liveObservers.values { observer(unique, readMarksMoved) }
    }

    /// Everything the live layer shows over the tree: typing flags, statuses, receipts, presence.
    public func liveEntriesOnQueue() -> [(Path, JSONValue)] {
        dispatchPrecondition(condition: .onQueue(queue))
        return live.entries + presenceEntriesOnQueue()
    }

    /// The value at `path` as the API shows it: the stored tree with the live layer over it.
    /// Presence, derived rather than written, shows only to reads at or below `/presence`: a
    /// read of `/` is the data (an empty database still reads as null).
    public func valueWithLiveOnQueue(_ base: JSONValue, at path: Path) -> JSONValue {
        dispatchPrecondition(condition: .onQueue(queue))
        let entries = LivePaths.isPresence(path) ? presenceEntriesOnQueue() : live.entries
        return LivePaths.overlay(base, at: path, entries: entries)
    }

    /// The live layer's entries a read of `path` shows (at, above or below it), or nil when a read
    /// there shows none: taken with a snapshot, so that a read streamed from it shows the live
    /// values of the same moment (`TreeStream`).
    public func liveEntriesOnQueue(for path: Path) -> [(Path, JSONValue)]? {
        dispatchPrecondition(condition: .onQueue(queue))
        guard LivePaths.touches(path) else { return nil }
        let entries = LivePaths.isPresence(path) ? presenceEntriesOnQueue() : live.entries
        return entries.filter { $0.0.isAncestorOrSelf(of: path) || path.isAncestor(of: $0.0) }
    }

    /// A query's `window` at `path`, read from the store, with the live layer over it
    /// (`LivePaths.overlay(window:of:at:entries:)`).
    public func windowWithLiveOnQueue(_ window: JSONValue, of query: FirebaseQuery, at path: Path) -> JSONValue {
        guard let entries = liveEntriesOnQueue(for: path) else { return window }
        return LivePaths.overlay(window: window, of: query, at: path, entries: entries)
    }

    /// Counts for tests and status: live values (typing and status) held, and receipts.
    public func liveCountsOnQueue() -> (values: Int, receipts: Int) {
        dispatchPrecondition(condition: .onQueue(queue))
        return (live.ephemeralCount, live.receipts.count)
    }
}
