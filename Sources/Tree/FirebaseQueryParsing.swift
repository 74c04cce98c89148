// Reading a FirebaseQuery from the REST API's query parameters, whose values are JSON.

extension FirebaseQuery {
    /// The parameters that make up a query; every other parameter (`ns`, `print`, `shallow`,
    /// `format`, `auth`, `download`, ...) belongs to someone else and is ignored here.
    public static let parameterNames: Set<String> = ["orderBy", "startAt", "endAt", "equalTo", "limitToFirst", "limitToLast"]

    /// The query the parameters describe, or nil when none of `parameterNames` is present (a
    /// plain read). Values are JSON as Firebase clients send them (`orderBy="$key"`,
    /// `startAt=5`, `equalTo="x"`), already percent-decoded.
    ///
    /// Refused: a filter or limit without `orderBy` (Firebase's own rule), a value that is not
    /// JSON, an unknown ordering or `"$priority"`, an object or array bound (or a non-string one
    /// when ordering by key), a negative or fractional limit, both limits, `equalTo` with
    /// `startAt`/`endAt`, and any query parameter given twice. A limit of 0 is allowed.
    public static func parse(_ params: [(String, String)]) throws(FirebaseQueryError) -> FirebaseQuery? {
        var raw: [String: String] = [:]
        for (name, value) in params where parameterNames.contains(name) {
            guard raw.updateValue(value, forKey: name) == nil else { throw .duplicateParameter(name) }
        }
        guard !raw.isEmpty else { return nil }
        guard let orderText = raw["orderBy"] else { throw .orderByMissing }

        let order = try parseOrder(json(orderText, parameter: "orderBy"))
        var query = FirebaseQuery(order: order)
        query.startAt = try raw["startAt"].map { text throws(FirebaseQueryError) in try bound(text, parameter: "startAt", order: order) }
        query.endAt = try raw["endAt"].map { text throws(FirebaseQueryError) in try bound(text, parameter: "endAt", order: order) }
        query.equalTo = try raw["equalTo"].map { text throws(FirebaseQueryError) in try bound(text, parameter: "equalTo", order: order) }
        if query.equalTo != nil, query.startAt != nil || query.endAt != nil { throw .conflictingRange }

        let first = try raw["limitToFirst"].map { text throws(FirebaseQueryError) in try count(text, parameter: "limitToFirst") }
        let last = try raw["limitToLast"].map { text throws(FirebaseQueryError) in try count(text, parameter: "limitToLast") }
        switch (first, last) {
        case (.some, .some): throw .conflictingLimits
        case (let count?, nil): query.limit = .first(count)
        case (nil, let count?): query.limit = .last(count)
        case (nil, nil): break
        }
        return query
    }

    /// `"$key"`, `"$value"` or a child path such as `"a/b"` (every key valid, not the root).
    private static func parseOrder(_ value: JSONValue) throws(FirebaseQueryError) -> Order {
        guard case .string(let text) = value else { throw .invalidOrderBy(value.serialized()) }
        switch text {
        case "$key": return .key
        case "$value": return .value
        case "$priority": throw .priorityUnsupported
        default:
            guard let path = try? Path(text), !path.isRoot else { throw .invalidOrderBy(text) }
            return .child(path)
        }
    }

    /// A range bound: a JSON scalar, and a string when ordering by key (keys are strings; such a
    /// bound is taken in NFC, the spelling keys have, so that either spelling bounds alike).
    private static func bound(_ text: String, parameter: String, order: Order) throws(FirebaseQueryError) -> JSONValue {
        let value = try json(text, parameter: parameter)
        switch (value, order) {
        case (.string(let key), .key): return .string(CanonicalText.nfc(key))
        case (.string, _): return value
        case (.null, .key), (.bool, .key), (.number, .key): throw .invalidBound(parameter: parameter)
        case (.null, _), (.bool, _), (.number, _): return value
        case (.object, _), (.array, _): throw .invalidBound(parameter: parameter)
        }
    }

    /// A limit: a JSON number that is a non-negative integer no larger than 2^53.
    private static func count(_ text: String, parameter: String) throws(FirebaseQueryError) -> Int {
        guard case .number(let number) = try json(text, parameter: parameter),
              number >= 0, number <= 9_007_199_254_740_992, number.rounded(.towardZero) == number else {
            throw .invalidLimit(parameter: parameter)
        }
        return Int(number)
    }

    /// The parameter's value as JSON.
    private static func json(_ text: String, parameter: String) throws(FirebaseQueryError) -> JSONValue {
        do {
            return try JSONValue.parse(text)
        } catch {
            throw .invalidJSON(parameter: parameter)
        }
    }
}
