/// The orderings declared for each zone list, as `zone_orders` holds them, kept by the store so
/// that storing a message does not ask SQLite for its list's orderings each time (two
/// statements of the five or so a stored message costs): a sync stores thousands of messages
/// per list, while an ordering is declared once per list and field and never removed.
///
/// Confined with the store's connection to its owner. A declaration forgets its list, so the
/// next look reads it again; a transaction that fails forgets every list, since what it
/// declared was rolled back. Bounded: past `maxLists` lists it starts over, so a member who
/// writes into many conversations costs reads again, not memory.
final class ZoneOrderCache {
    static let maxLists = 4096

    private var byList: [String: [(id: Int64, field: String)]] = [:]

    /// Whether any list has an ordering at all (nil: not known). A store where none does (a
    /// node that no client has queried yet, such as one in its first sync) then spares each
    /// message it stores working out its list's key and looking it up. Forgotten with any list.
    var anyDeclared: Bool?

    /// The orderings of a list (by its store key), if known.
    func orders(of list: String) -> [(id: Int64, field: String)]? { byList[list] }

    func remember(_ orders: [(id: Int64, field: String)], of list: String) {
        if byList.count >= ZoneOrderCache.maxLists { byList.removeAll(keepingCapacity: true) }
        byList[list] = orders
    }

    func forget(_ list: String) {
        byList[list] = nil
        anyDeclared = nil
    }

    func forgetAll() {
        byList.removeAll(keepingCapacity: true)
        anyDeclared = nil
    }
}
