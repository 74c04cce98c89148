internal import CSQLite

/// An error reported by SQLite, carrying everything needed to understand it from a log line.
///
/// Why one type: every sqlite3 result code of this module passes through
/// `SQLiteError.check(_:_:sql:)`, so callers handle one error type and can branch on
/// `code` (primary result code) or `extendedCode` (https://sqlite.org/rescode.html).
public struct SQLiteError: Error, CustomStringConvertible, Sendable {
    /// The primary result code (low 8 bits), e.g. 19 for SQLITE_CONSTRAINT.
    public let code: Int32
    /// The extended result code, e.g. 2067 for SQLITE_CONSTRAINT_UNIQUE. Equals `code`
    /// when SQLite gave no extra detail.
    public let extendedCode: Int32
    /// SQLite's English message (sqlite3_errmsg) or our own for errors detected here.
    public let message: String
    /// The SQL being run when the error happened, if any.
    public let sql: String?

    /// Builds an error by hand; used for misuse this module detects itself and by
    /// tests or fakes in other modules. `code` may be an extended code; the primary
    /// code is derived from it.
    public init(code: Int32, extendedCode: Int32? = nil, message: String, sql: String? = nil) {
        let extended = extendedCode ?? code
        self.code = extended & 0xFF
        self.extendedCode = extended
        self.message = message
        self.sql = sql
    }

    /// "SQLite error 19 (constraint): UNIQUE constraint failed: t.x (while running: INSERT ...)".
    public var description: String {
        var text = "SQLite error \(code) (\(Self.name(ofPrimaryCode: code))): \(message)"
        if let sql { text += " (while running: \(sql))" }
        return text
    }

    /// The single gate for sqlite3 result codes: OK, ROW and DONE pass through (and are
    /// returned so callers can tell ROW from DONE); anything else becomes a thrown error
    /// carrying the connection's message.
    @discardableResult
    static func check(_ resultCode: Int32, _ db: OpaquePointer?, sql: String? = nil) throws(SQLiteError) -> Int32 {
        switch resultCode {
        case SQLITE_OK, SQLITE_ROW, SQLITE_DONE:
            return resultCode
        default:
            throw SQLiteError(resultCode: resultCode, db: db, sql: sql)
        }
    }

    /// Reads the message from the connection only when it describes this very code;
    /// otherwise (no connection, or the connection's last error is a different one) falls
    /// back to the generic text for the code. https://sqlite.org/c3ref/errcode.html
    private init(resultCode: Int32, db: OpaquePointer?, sql: String?) {
        var message: String
        if let db, sqlite3_errcode(db) & 0xFF == resultCode & 0xFF, let cMessage = sqlite3_errmsg(db) {
            message = String(cString: cMessage)
        } else if let cMessage = sqlite3_errstr(resultCode) {
            message = String(cString: cMessage)
        } else {
            message = "unknown error"
        }
        if message.isEmpty { message = "unknown error" }
        self.init(code: resultCode, message: message, sql: sql)
    }

    /// Lower-case names of the primary result codes, for `description`.
    static func name(ofPrimaryCode code: Int32) -> String {
        let names = [
            "ok", "error", "internal", "perm", "abort", "busy", "locked", "nomem", "readonly",
            "interrupt", "ioerr", "corrupt", "notfound", "full", "cantopen", "protocol", "empty",
            "schema", "toobig", "constraint", "mismatch", "misuse", "nolfs", "auth", "format",
            "range", "notadb", "notice", "warning",
        ]
        return names.indices.contains(Int(code)) ? names[Int(code)] : "code \(code)"
    }
}

// MARK: - Result codes callers commonly branch on

extension SQLiteError {
    /// SQLITE_ERROR: generic error, e.g. SQL syntax error or missing table.
    public static let error: Int32 = SQLITE_ERROR
    /// SQLITE_BUSY: another connection holds a lock longer than the busy timeout.
    public static let busy: Int32 = SQLITE_BUSY
    /// SQLITE_LOCKED: a conflict within the same connection (e.g. DROP while reading).
    public static let locked: Int32 = SQLITE_LOCKED
    /// SQLITE_READONLY: a write was attempted on a read-only connection or file.
    public static let readOnly: Int32 = SQLITE_READONLY
    /// SQLITE_IOERR: the OS reported an I/O error.
    public static let ioError: Int32 = SQLITE_IOERR
    /// SQLITE_CORRUPT: the database file is malformed.
    public static let corrupt: Int32 = SQLITE_CORRUPT
    /// SQLITE_FULL: the disk is full.
    public static let full: Int32 = SQLITE_FULL
    /// SQLITE_CANTOPEN: the file could not be opened (missing, permissions, directory).
    public static let cantOpen: Int32 = SQLITE_CANTOPEN
    /// SQLITE_CONSTRAINT: a UNIQUE/NOT NULL/CHECK/FOREIGN KEY/datatype constraint failed.
    public static let constraint: Int32 = SQLITE_CONSTRAINT
    /// SQLITE_MISUSE: the API was used incorrectly (also used by this module for misuse it detects).
    public static let misuse: Int32 = SQLITE_MISUSE
    /// SQLITE_RANGE: a bind index or parameter count is wrong.
    public static let range: Int32 = SQLITE_RANGE
    /// SQLITE_NOTADB: the file is not an SQLite database.
    public static let notADatabase: Int32 = SQLITE_NOTADB

    // Extended codes are C macro expressions Swift does not import; values from sqlite3.h.

    /// Extended: UNIQUE constraint failed.
    public static let constraintUnique: Int32 = SQLITE_CONSTRAINT | (8 << 8)
    /// Extended: PRIMARY KEY constraint failed.
    public static let constraintPrimaryKey: Int32 = SQLITE_CONSTRAINT | (6 << 8)
    /// Extended: NOT NULL constraint failed.
    public static let constraintNotNull: Int32 = SQLITE_CONSTRAINT | (5 << 8)
    /// Extended: FOREIGN KEY constraint failed.
    public static let constraintForeignKey: Int32 = SQLITE_CONSTRAINT | (3 << 8)
    /// Extended: CHECK constraint failed.
    public static let constraintCheck: Int32 = SQLITE_CONSTRAINT | (1 << 8)
    /// Extended: a STRICT table refused a value of the wrong type.
    public static let constraintDatatype: Int32 = SQLITE_CONSTRAINT | (12 << 8)

    /// Another process holds the lock past the busy timeout: retry later, it is not data loss.
    public var isBusy: Bool { code == SQLITE_BUSY }
    /// A constraint refused the write: usually a duplicate or invalid input, not a broken database.
    public var isConstraint: Bool { code == SQLITE_CONSTRAINT }
    /// The file is damaged or not a database at all (SQLITE_CORRUPT or SQLITE_NOTADB):
    /// callers should stop and report, never retry.
    public var isCorrupt: Bool { code == SQLITE_CORRUPT || code == SQLITE_NOTADB }
    /// A write hit a read-only connection or file.
    public var isReadOnly: Bool { code == SQLITE_READONLY }
    /// The file could not be opened (missing with create: false, permissions, bad path).
    public var isCantOpen: Bool { code == SQLITE_CANTOPEN }
    /// The disk or quota is full.
    public var isFull: Bool { code == SQLITE_FULL }
    /// The operating system reported an I/O error (SQLITE_IOERR and its extended codes: read,
    /// write, fsync, truncate...).
    public var isIOError: Bool { code == SQLITE_IOERR }
}
