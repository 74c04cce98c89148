/// Why REST query parameters were refused. The local API answers each with 400 and
/// `{"error": description}`, so the descriptions are written for the client's developer.
public enum FirebaseQueryError: Error, Hashable, Sendable, CustomStringConvertible {
    /// A filter or limit was given without `orderBy`; Firebase refuses to guess an order.
    case orderByMissing
    /// A parameter's value is not JSON (values must be JSON: `orderBy="$key"`, `startAt=5`).
    case invalidJSON(parameter: String)
    /// `orderBy` is not a JSON string naming `$key`, `$value` or a valid, non-empty child path.
    case invalidOrderBy(String)
    /// `orderBy="$priority"`: lanchat stores no priorities, so ordering by them is refused
    /// rather than silently answered with a different order.
    case priorityUnsupported
    /// A `startAt`, `endAt` or `equalTo` value cannot be compared with the children: it is an
    /// object or array, or not a string while ordering by key. Carries the parameter's name.
    case invalidBound(parameter: String)
    /// A limit is not a non-negative integer (at most 2^53). Carries the parameter's name.
    case invalidLimit(parameter: String)
    /// `limitToFirst` and `limitToLast` were both given; only one end can be kept.
    case conflictingLimits
    /// `equalTo` was combined with `startAt` or `endAt`; it already is a range of one value.
    case conflictingRange
    /// A query parameter was given twice, which makes the query ambiguous.
    case duplicateParameter(String)

    /// The message for the client.
    public var description: String {
        switch self {
        case .orderByMissing:
            return "orderBy must be defined when other query parameters are defined"
        case .invalidJSON(let parameter):
            return "\(parameter) must be a valid JSON value"
        case .invalidOrderBy:
            return "orderBy must be a valid JSON encoded path, \"$key\" or \"$value\""
        case .priorityUnsupported:
            return "orderBy \"$priority\" is not supported: this database stores no priorities"
        case .invalidBound(let parameter):
            return "\(parameter) must be a JSON string, number, boolean or null (a string when ordering by \"$key\")"
        case .invalidLimit(let parameter):
            return "\(parameter) must be a non-negative integer"
        case .conflictingLimits:
            return "limitToFirst and limitToLast cannot both be defined"
        case .conflictingRange:
            return "equalTo cannot be combined with startAt or endAt"
        case .duplicateParameter(let parameter):
            return "query parameter \(parameter) is given more than once"
        }
    }
}
