import Crypto
import Private
import SQLite
import Tree
import Wire

/// The key and leave records of private conversations, indexed by conversation, and the trials
/// of key records' boxes under a budget (Protocol.md §9, §11.5).
///
/// Why an index: a conversation's membership is resolved from its own key and leave records,
/// and finding them by scanning every record read the whole `records` table (hundreds of MB at a
/// million records) each time. `private_control` holds one row per key or leave record, keyed
/// by conversation, and whether this node's device key opens it (`opens`), so a node also
/// knows which conversations it holds without trying every key record's boxes again on start.
extension Store {
    /// `opens`: NULL while the record's boxes wait for a trial (`KeyTrialQueue`), 1 when one of
    /// them is for the device named in `meta.private_trials_device`, 0 otherwise (a leave, a key
    /// record that may not key its conversation or that never counts: no trial needed).
    static let privateControlSchema = """
        CREATE TABLE IF NOT EXISTS private_control (
            conversation TEXT NOT NULL,
            seq INTEGER NOT NULL,
            opens INTEGER,
            PRIMARY KEY (conversation, seq)
        ) STRICT, WITHOUT ROWID;
        CREATE INDEX IF NOT EXISTS private_control_held ON private_control(conversation) WHERE opens = 1;
        CREATE INDEX IF NOT EXISTS private_control_untried ON private_control(seq) WHERE opens IS NULL;
        """

    /// The device key `private_control.opens` was worked out for.
    static let trialsDeviceMetaKey = "private_trials_device"

    /// Adds a stored key or leave record to the index, untried (adding it twice changes nothing).
    static func indexControlRecord(_ record: Record, seq: Int64, in db: Connection) throws {
        guard let conversation = record.privateConversationID else { return }
        let opens: SQLValue
        switch record.body {
        case let .groupKey(body): opens = ConversationID.mayKey(body, author: record.author) ? .null : .integer(0)
        case .leave: opens = .integer(0)
        default: return
        }
        try db.run("INSERT OR IGNORE INTO private_control(conversation, seq, opens) VALUES (?, ?, ?)", [.text(conversation), .integer(seq), opens])
    }

    func setOpens(_ conversation: String, seq: Int64, _ opens: Bool) throws {
        try db.run("UPDATE private_control SET opens = ? WHERE conversation = ? AND seq = ?",
                   [.integer(opens ? 1 : 0), .text(conversation), .integer(seq)])
    }

    /// One conversation's key and leave records whose trial is done: what its membership is
    /// resolved from. Reads the conversation's rows of the index and their records, nothing else.
    static let controlRecordsSQL = """
        SELECT records.bytes, private_control.opens FROM private_control JOIN records ON records.seq = private_control.seq
        WHERE private_control.conversation = ? AND private_control.opens IS NOT NULL ORDER BY private_control.seq
        """

    /// The key and leave records of one conversation whose trial is done, read from the store.
    func controlRecords(of conversation: String) throws -> [Record] {
        var found = [Record]()
        try db.query(Store.controlRecordsSQL, [.text(conversation)]) { row in
            guard let record = try? Record.decode(row.blob(0), verify: false) else { return }
            noteTried(record, opens: row.int64(1) != 0)
            found.append(record)
        }
        return found
    }

    /// A key record known to open nothing for this device is not tried again on resolution.
    private func noteTried(_ record: Record, opens: Bool) {
        if !opens, record.kind == .groupKey, boxKeys[record.id] == nil { boxKeys[record.id] = .some(nil) }
    }

    /// Key and leave records of the conversations this node holds a key of (one of their key
    /// records opens for its device), by conversation: read from the index once and kept up
    /// to date by `applyPrivate` and the trials. Empty while no device key is given. Key
    /// records still untried are put in the trial queue here.
    func controlRecords() throws -> [String: [Record]] {
        if let known = privateControl { return known }
        guard privateDevice != nil else { return [:] }
        var found = [String: [Record]]()
        try db.query("""
            SELECT private_control.conversation, records.bytes, private_control.opens
            FROM private_control JOIN records ON records.seq = private_control.seq
            WHERE private_control.opens IS NOT NULL
              AND private_control.conversation IN (SELECT conversation FROM private_control WHERE opens = 1)
            """) { row in
            guard let record = try? Record.decode(row.blob(1), verify: false) else { return }
            noteTried(record, opens: row.int64(2) != 0)
            found[row.text(0), default: []].append(record)
        }
        privateControl = found.mapValues(Store.counting)
        try queueUntried()
        return privateControl!
    }

    /// Puts every key record whose trial is not done in the trial queue (unless there already).
    private func queueUntried() throws {
        var mayNot = [(String, Int64)]()
        try db.query("""
            SELECT private_control.conversation, private_control.seq, records.bytes
            FROM private_control JOIN records ON records.seq = private_control.seq
            WHERE private_control.opens IS NULL ORDER BY private_control.seq
            """) { row in
            let seq = row.int64(1)
            guard !keyTrials.contains(seq) else { return }
            guard let record = try? Record.decode(row.blob(2), verify: false), case let .groupKey(body) = record.body,
                  ConversationID.mayKey(body, author: record.author) else {
                mayNot.append((row.text(0), seq))
                return
            }
            keyTrials.enqueue(seq: seq, author: record.author, boxes: body.boxes.count)
        }
        for (conversation, seq) in mayNot { try setOpens(conversation, seq: seq, false) }
    }

    /// Marks every key record untried, for a device key other than the one `opens` was worked
    /// out for (once, when keys are given).
    func forgetTrialsUnlessFor(_ marker: String) throws {
        let stored = try db.first("SELECT value FROM meta WHERE key = ?", [.text(Store.trialsDeviceMetaKey)]) { $0.text(0) }
        guard stored != marker else { return }
        try db.run("""
            UPDATE private_control SET opens = NULL
            WHERE opens IS NOT NULL AND seq IN (SELECT seq FROM records WHERE kind = ? AND seq = private_control.seq)
            """, [.integer(Int64(RecordKind.groupKey.rawValue))])
        try db.run("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", [.text(Store.trialsDeviceMetaKey), .text(marker)])
    }

    /// Tries the key records the budgets allow now, in the queue's fair order.
    func runKeyTrials() throws {
        guard let device = privateDevice, !rebuildingTree else { return }
        while let (seq, _) = keyTrials.next(nowMillis: keyTrialMillis()) {
            guard let bytes = try db.first("SELECT bytes FROM records WHERE seq = ?", [.integer(seq)], { $0.blob(0) }),
                  let record = try? Record.decode(bytes, verify: false), case let .groupKey(body) = record.body else { continue }
            try tryKeyRecord(record, body, seq: seq, device: device)
        }
    }

    /// Runs the key record trials due now, in one transaction, and returns in how many
    /// milliseconds the next may run (nil: none waits). The node calls it again then.
    public func tryWaitingKeyRecords() throws -> UInt64? {
        if keyTrials.count > 0, privateDevice != nil { try transaction { try runKeyTrials() } }
        return privateDevice == nil ? nil : keyTrials.delay(nowMillis: keyTrialMillis())
    }

    /// Key records waiting for a trial.
    public var waitingKeyRecords: Int { keyTrials.count }

    /// The key records tried since last asked whose boxes opened for this node: their
    /// conversations changed, perhaps long after the records were stored.
    public func takeOpenedKeyRecords() -> [Record] {
        defer { openedKeyRecords = [] }
        return openedKeyRecords
    }

    /// Tries a key record's boxes and applies what it changes: a conversation this node now
    /// holds, or a held conversation's new epoch.
    func tryKeyRecord(_ record: Record, _ body: GroupKeyBody, seq: Int64, device: X25519PrivateKey) throws {
        let conversation = body.conversation
        let held = try controlRecords()[conversation] != nil
        let opens = openBox(record.id, body, device: device) != nil
        try setOpens(conversation, seq: seq, opens)
        if opens { openedKeyRecords.append(record) }
        guard held else {
            guard opens else {
                // Still none of ours. The index keeps that (`opens` 0), so the memory of trials
                // follows the conversations held, not every key record ever tried.
                boxKeys[record.id] = nil
                return
            }
            let all = try controlRecords(of: conversation)  // this one included
            let before = resolve(conversation, all.filter { $0.id != record.id }, device: device)
            privateControl![conversation] = Store.counting(all)
            memberships[conversation] = nil
            try membershipChanged(conversation, before: before)
            return
        }
        // One key record counts per author and epoch number, the first in write order
        // (Protocol.md §11.5): a later one never will, and is not kept in memory nor
        // resolved; an earlier one takes the place of the one kept.
        var (kept, before) = try controlWithout(record, of: conversation, device: device)
        if let index = kept.firstIndex(where: { Store.sameSlot($0, as: record, body) }) {
            guard record.order < kept[index].order else { return }
            kept.remove(at: index)
        }
        kept.append(record)
        privateControl![conversation] = kept
        memberships[conversation] = nil
        try membershipChanged(conversation, before: before)
    }
}
