import Crypto
import Private
import SQLite
import Tree
import Wire

extension Store {
    /// Folds one private conversation again from its records: its subtree (`/conversations/$cid`:
    /// its leaves, cuts and zones, the order rows of its message list, and the keys of sealed
    /// files its messages name) is emptied and its sealed writes and membership applied again;
    /// the rest of the tree is not touched. Call inside a transaction.
    ///
    /// Why it gives what a whole refold gives: only sealed writes of the conversation (opened
    /// with its membership) and its membership meta write there (`PairFold` drops plain pairs
    /// that reach it, `KeySchedule.checkInside` keeps sealed pairs inside their conversation),
    /// and the fold is the same whatever the order pairs arrive in, so applying them again
    /// beside the untouched rest of the tree (whose cuts at `/` and `/conversations` still
    /// hide what they hid) ends where folding everything would. Its cost follows the
    /// conversation's records, not the store's: a creator backdating removals in many groups
    /// costs each group's own refold.
    func refoldConversation(_ conversation: String) throws {
        conversationRefolds += 1
        let key = StoreKey.of(try Path(segments: ["conversations", conversation]))
        let (low, high) = StoreKey.descendants(key)
        let range: [SQLValue] = [.text(low), .text(high)]
        try forgetSealedFileKeys(named: low, high)
        try db.run("DELETE FROM leaves WHERE path >= ? AND path < ?", range)
        try db.run("DELETE FROM cuts WHERE path >= ? AND path < ?", range)
        try db.run("DELETE FROM zone_records WHERE zone >= ? AND zone < ?", range)
        try db.run("DELETE FROM zones WHERE zone >= ? AND zone < ?", range)
        try db.run("DELETE FROM zone_order_rows WHERE ord IN (SELECT id FROM zone_orders WHERE list >= ? AND list < ?)", range)
        memberships[conversation] = nil
        try materializePrivate(conversation)
    }

    /// Drops the keys of sealed files that the messages in the key range name (as
    /// `ZoneStore.noteReferences` noted them): folding the messages again notes again those
    /// of the messages that still count.
    private func forgetSealedFileKeys(named low: String, _ high: String) throws {
        var named = [(String, [UInt8])]()
        try db.query("SELECT zone, \(ZoneStore.valueColumns) FROM zones WHERE zone >= ? AND zone < ? AND value IS NOT NULL",
                     [.text(low), .text(high)]) { row in
            guard let path = try? StoreKey.path(row.text(0)), case .message = Zone.of(path),
                  case let .object(fields)? = try? ZoneStore.storedValue(row, column: 1, zone: Zone.of(path)),
                  case let .string(url)? = fields["photoURL"], case let .string(text)? = fields["photoKey"],
                  let fileKey = SealedFile.decodeKey(text) else { return }
            named.append((FileEntry.canonicalPath(Store.storagePath(fromURL: url) ?? url), fileKey))
        }
        for (path, fileKey) in named {
            try db.run("DELETE FROM sealed_file_keys WHERE path = ? AND key = ?", [.text(path), .blob(fileKey)])
        }
    }
}
