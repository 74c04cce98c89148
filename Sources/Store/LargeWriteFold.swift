import Private
import Tree
import Wire

/// Folds the pairs of a large write's content from its events as they are read
/// (`LargeWriteContent.read`), so that no pair of the open zone is ever built whole: its leaves
/// go to the tree (`StreamedOpenPair`) as they come. A pair inside a zone is built whole (a
/// zone is one row of `zones`, and its fold reads it whole), which the content's check bounds
/// to `LargeWrite.pairLimits.maxItems` items; a pair in a private conversation is read past
/// (plain writes take no effect there, Protocol.md §11.1). Run only on a content already found
/// valid, inside the transaction that holds the whole fold.
struct StreamedPairFold {
    private var fold: Store.PairFold
    private let store: Store
    private var current: Current = .none

    private enum Current {
        case none
        case skipped
        case zone(Path, ContentValueBuilder)
        case open(OpenPairLeaves)
    }

    init(record: Record, seq: Int64, store: Store) {
        fold = Store.PairFold(record: record, seq: seq)
        self.store = store
    }

    mutating func take(_ event: ContentEvent) throws {
        switch event {
        case let .pair(path):
            if Store.reachesPrivate(path) {
                current = .skipped
            } else if Zone.of(path) == .open {
                current = .open(OpenPairLeaves(try StreamedOpenPair(db: store.db, path: path, order: fold.order()), path: path))
            } else {
                current = .zone(path, ContentValueBuilder())
            }
        case .pairEnd:
            let ended = current
            current = .none
            switch ended {
            case let .zone(path, builder):
                guard let value = builder.value else { preconditionFailure("a valid pair ends with its value") }
                try fold.apply(WritePair(path: path, value: value), in: store) { TreeValueCodec.encode(value).encoded()[...] }
            case var .open(leaves):
                try leaves.pair.finish()
            case .none, .skipped:
                return
            }
        default:
            switch current {
            case .zone(let path, var builder):
                current = .none
                builder.add(event)
                current = .zone(path, builder)
            case var .open(leaves):
                current = .none
                try leaves.take(event)
                current = .open(leaves)
            case .none, .skipped:
                return
            }
        }
    }

    /// The users directory follows the author's profile, in the same transaction.
    func finish() throws { try fold.finish(in: store) }
}

/// Where the events of an open pair's value are, in the tree: the store key of the member
/// being read, whether it lies in a zone or a private conversation (stripped: a pair in the
/// open zone never reaches into them, §5.4, §11.1), and whether a newer write below covers it.
struct OpenPairLeaves {
    var pair: StreamedOpenPair
    private struct Frame {
        var key: String
        var stripped: Bool
        var covered: Bool
    }
    /// The open objects, outermost first.
    private var stack: [Frame] = []
    /// The member whose value comes next.
    private var next: Frame
    /// The keys from the root down to the member being read.
    private var segments: [String]
    private let base: Int

    init(_ pair: StreamedOpenPair, path: Path) {
        self.pair = pair
        next = Frame(key: pair.key, stripped: false, covered: false)
        segments = path.segments
        base = segments.count
    }

    mutating func take(_ event: ContentEvent) throws {
        switch event {
        case .objectStart:
            stack.append(next)
        case let .key(key):
            guard let parent = stack.last else { preconditionFailure("a key outside an object") }
            segments.append(key)
            let childKey = parent.key + String(StoreKey.separator) + key
            let stripped = parent.stripped || (segments.count <= 4 && Self.strips(segments))
            next = Frame(key: childKey, stripped: stripped, covered: parent.covered || (!stripped && pair.covers(childKey)))
        case let .leaf(value):
            if value != .null, !next.stripped { try pair.leaf(value, at: next.key, covered: next.covered) }
            if segments.count > base { segments.removeLast() }
        case .objectEnd:
            stack.removeLast()
            if segments.count > base { segments.removeLast() }
        case .pair, .pairEnd:
            return
        }
    }

    /// Whether a member at `segments` is left out of an open pair: a zone's root, or a private
    /// conversation (`Zone.stripZones`, `Store.strippingPrivate`).
    static func strips(_ segments: [String]) -> Bool {
        Zone.isRoot(segments) || (segments.count == 2 && segments[0] == "conversations" && ConversationID.isPrivate(segments[1]))
    }
}
