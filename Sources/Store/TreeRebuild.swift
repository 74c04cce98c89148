import SQLite
import Tree
import Wire

extension Store {
    /// Materializes the tree again from the records alone: the open zone's leaves and cuts, the
    /// protected zones, the files and the users directory are emptied and every record is applied
    /// again, in one transaction.
    ///
    /// Why: the tree is a pure function of the record set (Protocol.md §5.3), so when the rules
    /// that fold it change (who owns a message, how keys are compared), a store materialized under
    /// the old rules is brought up to date by folding again what it holds. Migration 6 asks for
    /// it (`meta.tree_rebuild`); the request is cleared in the same transaction, so a crash midway
    /// leaves the old tree and the request, and the next open starts over.
    func rebuildTreeIfRequested() throws {
        guard try db.scalarInt("SELECT value FROM meta WHERE key = 'tree_rebuild'") == 1 else { return }
        try transaction {
            // Another process may have done it between the look above and this transaction.
            guard try db.scalarInt("SELECT value FROM meta WHERE key = 'tree_rebuild'") == 1 else { return }
            try refoldEverything()
            try db.run("DELETE FROM meta WHERE key = 'tree_rebuild'")
        }
    }

    /// Folds the whole tree again from the records, in one transaction: what a migration asks
    /// for, and the ceiling a benchmark measures a conversation's refold against.
    public func foldEverythingAgain() throws {
        try transaction { try refoldEverything() }
    }

    /// Empties the materialized tree and folds every record again; call inside a transaction.
    /// Private conversations are folded last, with the keys this store was given; without
    /// them they are left out, to be folded when `usePrivateKeys` gives them.
    func refoldEverything() throws {
        wholeRefolds += 1
        do {
            try db.execute("""
                DELETE FROM leaves; DELETE FROM cuts; DELETE FROM zones; DELETE FROM zone_records;
                DELETE FROM files; DELETE FROM file_refs; DELETE FROM sealed_file_keys; DELETE FROM zone_order_rows;
                DELETE FROM pending_large_writes;
                """)
            rebuildingTree = true
            defer { rebuildingTree = false }
            privateControl = nil  // read again from the records below, not appended to twice
            // Records are read in arrival order; the fold does not depend on it. They were
            // verified when stored, so only decoded here. A record that no longer decodes (its
            // paths meet once keys are taken in NFC, Protocol.md §5.1) is one this node would
            // now refuse: it takes no effect, as on a node that never stored it.
            try db.query("SELECT seq, bytes FROM records ORDER BY seq") { row in
                guard let record = try? Record.decode(row.blob(1), verify: false) else { return }
                try apply(record, seq: row.int64(0))
            }
            if privateDevice != nil {
                memberships = [:]
                for conversation in try controlRecords().keys.sorted() { try materializePrivate(conversation) }
            } else {
                try db.run("DELETE FROM meta WHERE key = ?", [.text(Store.privateDeviceMetaKey)])
            }
            try rebuildUserDirectoryFromTree()
        }
    }
}
