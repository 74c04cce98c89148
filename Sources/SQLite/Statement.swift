internal import CSQLite

/// SQLITE_TRANSIENT: tells sqlite3_bind_text/blob to copy the bytes before returning,
/// because Swift only guarantees the buffer for the duration of the closure.
/// https://sqlite.org/c3ref/c_static.html
private var transientDestructor: sqlite3_destructor_type {
    unsafeBitCast(-1 as Int, to: sqlite3_destructor_type.self)
}

/// A compiled SQL statement (sqlite3_stmt), reusable across many executions.
///
/// Why a class: it owns a C handle that must be finalized exactly once, in `deinit`.
/// A statement belongs to its connection's thread or queue, like the `Connection` itself.
/// It may outlive the `Connection` object safely: the connection is closed with
/// sqlite3_close_v2, which waits for the last statement to be finalized
/// (https://sqlite.org/c3ref/close.html).
///
/// Typical hot-path use: `try stmt.run([...])`, or `bind`, then `step()` in a loop
/// reading columns, then `reset()`.
public final class Statement {
    /// The sqlite3_stmt handle.
    let handle: OpaquePointer
    /// The sqlite3 connection handle, for error messages.
    let db: OpaquePointer
    /// The SQL text this statement was compiled from (used in errors and as the cache key).
    public let sql: String
    /// `sql`'s length in UTF-8 bytes, compared before the text when the connection looks for a
    /// cached statement. Kept rather than asked of the string each time: asking checks the
    /// string's representation first, some 130 instructions per record a sync stores.
    let sqlLength: Int
    /// Whether a parameter may be bound since the bindings were last cleared: clearing cost
    /// some 580 instructions even with nothing bound, and a cached statement is cleared both
    /// when its user is done and when it is handed out again.
    private var mayHaveBindings = true

    init(handle: OpaquePointer, sql: String) {
        self.handle = handle
        self.db = sqlite3_db_handle(handle)
        self.sql = sql
        self.sqlLength = sql.utf8.count
    }

    deinit {
        sqlite3_finalize(handle)
    }

    /// Virtual machine steps this statement has run since it was compiled
    /// (SQLITE_STMTSTATUS_VM_STEP): the work a query does, whatever the machine's load.
    public var virtualMachineSteps: Int { Int(sqlite3_stmt_status(handle, SQLITE_STMTSTATUS_VM_STEP, 0)) }

    /// Steps a full table scan took (SQLITE_STMTSTATUS_FULLSCAN_STEP): 0 when every table
    /// read is through an index.
    public var fullScanSteps: Int { Int(sqlite3_stmt_status(handle, SQLITE_STMTSTATUS_FULLSCAN_STEP, 0)) }

    // MARK: Binding

    /// The number of `?` parameters, so callers and `bind(_:)` can check argument counts.
    public var parameterCount: Int32 { sqlite3_bind_parameter_count(handle) }

    /// Binds all parameters positionally (`values[0]` to `?1`). The count must match
    /// exactly: SQLite would silently leave missing ones NULL, which hides bugs.
    public func bind(_ values: [SQLValue]) throws(SQLiteError) {
        guard values.count == Int(parameterCount) else {
            throw SQLiteError(
                code: SQLiteError.range,
                message: "statement expects \(parameterCount) parameter(s), got \(values.count)",
                sql: sql)
        }
        for (offset, value) in values.enumerated() {
            try bind(value, at: Int32(offset + 1))
        }
    }

    /// Binds one parameter; `index` is 1-based, as in SQLite.
    /// Text and blobs are copied by SQLite (SQLITE_TRANSIENT), so no Swift storage
    /// needs to outlive this call. https://sqlite.org/c3ref/bind_blob.html
    public func bind(_ value: SQLValue, at index: Int32) throws(SQLiteError) {
        mayHaveBindings = true
        let rc: Int32
        switch value {
        case .null:
            rc = sqlite3_bind_null(handle, index)
        case .integer(let v):
            rc = sqlite3_bind_int64(handle, index, v)
        case .real(let v):
            rc = sqlite3_bind_double(handle, index, v)
        case .text(var string):
            rc = string.withUTF8 { bytes in
                // A nil pointer would bind NULL, so an empty string gets a real "" pointer.
                guard let base = bytes.baseAddress, bytes.count > 0 else {
                    return sqlite3_bind_text(handle, index, "", 0, transientDestructor)
                }
                return base.withMemoryRebound(to: CChar.self, capacity: bytes.count) { chars in
                    sqlite3_bind_text64(
                        handle, index, chars, UInt64(bytes.count), transientDestructor, UInt8(SQLITE_UTF8))
                }
            }
        case .blob(let bytes):
            if bytes.isEmpty {
                // sqlite3_bind_blob with a nil pointer binds NULL; a zero-length
                // zeroblob is a genuine empty blob. https://sqlite.org/c3ref/bind_blob.html
                rc = sqlite3_bind_zeroblob(handle, index, 0)
            } else {
                rc = bytes.withUnsafeBytes { raw in
                    sqlite3_bind_blob64(handle, index, raw.baseAddress, UInt64(raw.count), transientDestructor)
                }
            }
        }
        try SQLiteError.check(rc, db, sql: sql)
    }

    /// Binds a blob lying in a larger buffer (a value inside a record's bytes) without first
    /// copying it into an array of its own, as `SQLValue.blob` would need. Copied by SQLite.
    public func bind(blob bytes: ArraySlice<UInt8>, at index: Int32) throws(SQLiteError) {
        guard !bytes.isEmpty else { return try bind(.blob([]), at: index) }
        try SQLiteError.check(bytes.withUnsafeBytes { bindCopy(of: $0, at: index) }, db, sql: sql)
    }

    /// Binds bytes in place as a blob (copied by SQLite), for values held inline rather than in
    /// an array, such as a record id, bound once per record a sync stores or serves.
    public func bind(rawBlob bytes: UnsafeRawBufferPointer, at index: Int32) throws(SQLiteError) {
        guard bytes.count > 0 else { return try bind(.blob([]), at: index) }
        try SQLiteError.check(bindCopy(of: bytes, at: index), db, sql: sql)
    }

    /// Binds non-empty bytes as a blob that SQLite copies; SQLite's result code.
    private func bindCopy(of bytes: UnsafeRawBufferPointer, at index: Int32) -> Int32 {
        mayHaveBindings = true
        return sqlite3_bind_blob64(handle, index, bytes.baseAddress, UInt64(bytes.count), transientDestructor)
    }

    /// Sets every parameter back to NULL, dropping copies of large bound blobs.
    /// https://sqlite.org/c3ref/clear_bindings.html
    public func clearBindings() {
        guard mayHaveBindings else { return }
        sqlite3_clear_bindings(handle)
        mayHaveBindings = false
    }

    // MARK: Execution

    /// Runs the statement one step. Returns true when a row is available to read,
    /// false when the statement has finished.
    /// With sqlite3_prepare_v2/v3 statements the specific error code comes straight back
    /// from step. https://sqlite.org/c3ref/step.html
    public func step() throws(SQLiteError) -> Bool {
        try SQLiteError.check(sqlite3_step(handle), db, sql: sql) == SQLITE_ROW
    }

    /// Rewinds the statement so it can run again; keeps bindings. Also ends the
    /// statement's implicit read, so a half-read SELECT stops pinning a WAL snapshot.
    /// sqlite3_reset repeats the last step error, which `step()` already threw, so its
    /// result is deliberately ignored. https://sqlite.org/c3ref/reset.html
    public func reset() {
        sqlite3_reset(handle)
    }

    /// Resets, binds `values`, steps to completion and resets again: the one-call way to
    /// run a prepared INSERT/UPDATE/DELETE on a hot path. Any result rows are skipped.
    public func run(_ values: [SQLValue] = []) throws(SQLiteError) {
        reset()
        defer { reset() }
        try bind(values)
        while try step() {}
    }

    // MARK: Columns of the current row

    /// Number of result columns (0 for statements that return no data).
    public var columnCount: Int32 { sqlite3_column_count(handle) }

    /// The name of result column `index` (0-based), as given by `AS` or derived by SQLite.
    public func columnName(_ index: Int32) -> String {
        guard let name = sqlite3_column_name(handle, index) else { return "" }
        return String(cString: name)
    }

    /// The 0-based index of the result column called `name`, so rows can be read by name.
    public func columnIndex(named name: String) -> Int32? {
        for index in 0..<columnCount where columnName(index) == name { return index }
        return nil
    }

    /// True when column `index` of the current row is NULL.
    public func isNull(_ index: Int32) -> Bool {
        sqlite3_column_type(handle, index) == SQLITE_NULL
    }

    /// Column `index` as Int64, with SQLite's conversions (NULL is 0, text is parsed).
    public func int64(_ index: Int32) -> Int64 {
        sqlite3_column_int64(handle, index)
    }

    /// Column `index` as Int (see `int64(_:)`).
    public func int(_ index: Int32) -> Int {
        Int(sqlite3_column_int64(handle, index))
    }

    /// Column `index` as Double, with SQLite's conversions (NULL is 0.0).
    public func double(_ index: Int32) -> Double {
        sqlite3_column_double(handle, index)
    }

    /// Column `index` as a String (NULL is ""). Uses the byte count, not NUL-termination,
    /// so embedded NULs survive; invalid UTF-8 is repaired with U+FFFD.
    /// sqlite3_column_text must be called before sqlite3_column_bytes, as the text
    /// conversion can change the byte count. https://sqlite.org/c3ref/column_blob.html
    public func text(_ index: Int32) -> String {
        guard let chars = sqlite3_column_text(handle, index) else { return "" }
        let count = Int(sqlite3_column_bytes(handle, index))
        return String(decoding: UnsafeBufferPointer(start: chars, count: count), as: UTF8.self)
    }

    /// Column `index` as bytes (NULL and an empty blob are both []). The bytes are copied,
    /// since SQLite's buffer is only valid until the next step or reset.
    public func blob(_ index: Int32) -> [UInt8] {
        // Pointer first, then size, as for text. A zero-length blob yields a nil pointer.
        guard let raw = sqlite3_column_blob(handle, index) else { return [] }
        let count = Int(sqlite3_column_bytes(handle, index))
        return [UInt8](UnsafeRawBufferPointer(start: raw, count: count))
    }

    /// Calls `body` with column `index`'s bytes where SQLite holds them (empty for NULL), so a
    /// large blob can be copied once, straight to where it is going, rather than first into an
    /// array of its own. The pointer is valid only during the call.
    public func withBlob<T>(_ index: Int32, _ body: (UnsafeRawBufferPointer) throws -> T) rethrows -> T {
        guard let raw = sqlite3_column_blob(handle, index) else { return try body(UnsafeRawBufferPointer(start: nil, count: 0)) }
        let count = Int(sqlite3_column_bytes(handle, index))
        return try body(UnsafeRawBufferPointer(start: raw, count: count))
    }

    /// Column `index` exactly as stored, keeping its storage class (NULL vs empty blob,
    /// integer vs real). https://sqlite.org/c3ref/column_blob.html
    public func value(_ index: Int32) -> SQLValue {
        switch sqlite3_column_type(handle, index) {
        case SQLITE_NULL: return .null
        case SQLITE_INTEGER: return .integer(sqlite3_column_int64(handle, index))
        case SQLITE_FLOAT: return .real(sqlite3_column_double(handle, index))
        case SQLITE_TEXT: return .text(text(index))
        default: return .blob(blob(index))
        }
    }

    /// All columns of the current row, copied out, for callers that keep rows.
    public var values: [SQLValue] {
        (0..<columnCount).map { value($0) }
    }
}

/// A statement is tied to its connection's thread; never share it.
@available(*, unavailable)
extension Statement: Sendable {}
