/// The current row of a running statement, handed to `Connection.query` callbacks.
///
/// Why a view and not a copy: reading columns straight from the statement avoids
/// allocating an array per row on hot paths. The price: a `Row` is only valid inside the
/// callback that received it; the next step overwrites it. Copy out with `values` or the
/// typed accessors if you need to keep data.
public struct Row {
    /// The statement positioned on this row.
    let statement: Statement

    init(statement: Statement) {
        self.statement = statement
    }

    /// Number of columns in the row.
    public var columnCount: Int32 { statement.columnCount }
    /// Name of column `index` (0-based).
    public func columnName(_ index: Int32) -> String { statement.columnName(index) }
    /// 0-based index of the column called `name`, if any.
    public func columnIndex(named name: String) -> Int32? { statement.columnIndex(named: name) }
    /// True when column `index` is NULL.
    public func isNull(_ index: Int32) -> Bool { statement.isNull(index) }
    /// Column `index` as Int64 (NULL reads as 0; use `value(_:)` to tell them apart).
    public func int64(_ index: Int32) -> Int64 { statement.int64(index) }
    /// Column `index` as Int (NULL reads as 0).
    public func int(_ index: Int32) -> Int { statement.int(index) }
    /// Column `index` as Double (NULL reads as 0.0).
    public func double(_ index: Int32) -> Double { statement.double(index) }
    /// Column `index` as String (NULL reads as "").
    public func text(_ index: Int32) -> String { statement.text(index) }
    /// Column `index` as bytes (NULL reads as []).
    public func blob(_ index: Int32) -> [UInt8] { statement.blob(index) }

    /// Column `index`'s bytes without a copy, valid only during `body` (see `Statement.withBlob`).
    public func withBlob<T>(_ index: Int32, _ body: (UnsafeRawBufferPointer) throws -> T) rethrows -> T {
        try statement.withBlob(index, body)
    }
    /// Column `index` with its storage class preserved.
    public func value(_ index: Int32) -> SQLValue { statement.value(index) }
    /// Column `name` with its storage class preserved; `.null` if there is no such column.
    public func value(named name: String) -> SQLValue {
        columnIndex(named: name).map { value($0) } ?? .null
    }
    /// All columns, copied out, safe to keep after the callback.
    public var values: [SQLValue] { statement.values }
}

/// A row view is tied to its statement's thread; never share it.
@available(*, unavailable)
extension Row: Sendable {}
