import Crypto
import Node
import Store
import TestSupport
import Tree
import Wire

/// The writes of a run, made through the node's own write path (`Node.write`, as the CLI and
/// the local API use it): profile edits, messages (new, edited, deleted), an open-zone title,
/// large messages and photos; and a hostile member's records, signed with its valid key but
/// written into other users' profiles and messages with clocks of its choosing.
struct Workload {
    var rng: SplitMix64
    var model = Model()
    let faults: FaultCounter
    let loop: EventLoop
    private var counter = 0

    init(seed: UInt64, faults: FaultCounter, loop: EventLoop) {
        rng = SplitMix64(seed: seed)
        self.faults = faults
        self.loop = loop
    }

    /// One random honest write by `host`, or nothing if its node is down or stalled (a stalled
    /// process cannot take a write; the user's command would wait).
    mutating func honestWrite(_ host: SimHost) throws {
        guard let node = host.node, host.frozenUntil <= loop.now else { return }
        counter += 1
        let uid = host.userID
        let roll = Int.random(in: 0..<100, using: &rng)
        let mine = model.messages.filter { $0.value.owner == uid && $0.value.value != nil }.keys.sorted()
        if roll < 25 {
            let field = ["first_name", "last_name", "email", "platform"].randomElement(using: &rng)!
            let value = JSONValue.string("\(field)-\(host.index)-\(counter)")
            try write(node, host, "profile \(field)") { store, key, now in
                try store.set(try Path(segments: Layout.profile(uid) + [field]), to: value, signer: key, nowMillis: now)
            }
            model.profiles[uid, default: [:]][field] = value
        } else if roll < 55 || mine.isEmpty {
            try newMessage(node, host, text: "hello \(counter) from n\(host.index)")
        } else if roll < 65 {
            let key = mine.randomElement(using: &rng)!
            let text = JSONValue.string("edited \(counter)")
            try write(node, host, "edit message") { store, signer, now in
                try store.set(try Path(segments: Layout.message(key) + ["text"]), to: text, signer: signer, nowMillis: now)
            }
            if case var .object(fields)? = model.messages[key]?.value {
                fields["text"] = text
                model.messages[key] = (uid, .object(fields))
            }
        } else if roll < 70 {
            let key = mine.randomElement(using: &rng)!
            try write(node, host, "delete message") { store, signer, now in
                try store.delete(try Path(segments: Layout.message(key)), signer: signer, nowMillis: now)
            }
            model.messages[key] = (uid, nil)
        } else if roll < 82 {
            let title = JSONValue.string("title \(counter)")
            try write(node, host, "title") { store, signer, now in
                try store.set(try Path(segments: Layout.title()), to: title, signer: signer, nowMillis: now)
            }
        } else if roll < 90 {
            try largeMessage(host)
        } else {
            try photo(node, host)
        }
    }

    /// A message of 100 to 900 KB (records may be up to 1 MiB).
    mutating func largeMessage(_ host: SimHost) throws {
        guard let node = host.node, host.frozenUntil <= loop.now else { return }
        counter += 1
        let size = Int.random(in: 100_000...900_000, using: &rng)
        let text = String(decoding: randomBytes(size).map { 97 + $0 % 26 }, as: UTF8.self)
        faults.count(.largeRecord)
        try newMessage(node, host, text: text)
    }

    private mutating func newMessage(_ node: Node, _ host: SimHost, text: String, extra: [String: JSONValue] = [:]) throws {
        let uid = host.userID
        let key = MessageKey.bind(pushPrefix(), to: uid)
        var fields: [String: JSONValue] = ["senderId": .string(uid), "senderName": .string("User \(host.index)"),
                                           "date": .number(Double(node.wallMillis())), "text": .string(text)]
        for (name, value) in extra { fields[name] = value }
        let value = JSONValue.object(fields)
        try write(node, host, "message \(text.utf8.count) B") { store, signer, now in
            try store.set(try Path(segments: Layout.message(key)), to: value, signer: signer, nowMillis: now)
        }
        model.messages[key] = (uid, value)
    }

    /// A photo: stored as chunks, then referenced by a message or the profile picture, so that
    /// every other node fetches it eagerly.
    private mutating func photo(_ node: Node, _ host: SimHost) throws {
        let uid = host.userID
        let path = "\(uid)/photos/p\(counter).png"
        // Now and then a large one (dozens of chunks), usually a phone photo's thumbnail size.
        let size = rng.chance(0.1) ? Int.random(in: 1_000_000...3_000_000, using: &rng) : Int.random(in: 70_000...400_000, using: &rng)
        var bytes: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        bytes += randomBytes(size - 8)
        faults.count(.photo)
        try write(node, host, "photo \(size) B") { store, signer, now in
            try store.putFile(path, bytes: bytes, signer: signer, nowMillis: now)
        }
        model.files.append(path)
        if rng.chance(0.5) {
            try write(node, host, "profile picture") { store, signer, now in
                try store.set(try Path(segments: Layout.profile(uid) + ["picture"]), to: .string(path), signer: signer, nowMillis: now)
            }
            model.profiles[uid, default: [:]]["picture"] = .string(path)
        } else {
            try newMessage(node, host, text: "", extra: ["photoURL": .string(path)])
        }
    }

    /// Runs `body` on the host's store and notes the records it stored as acknowledged. Most
    /// writes go through the node (`Node.write`, as the local API's do: durable when it
    /// returns, pushed at once); some as the CLI makes them while a node runs: on the store file
    /// from another connection (another process), then asking the node to pick them up.
    private mutating func write(_ node: Node, _ host: SimHost, _ label: String,
                                _ body: (Store, PrivateKey, UInt64) throws -> Any) throws {
        func run(_ store: Store, _ key: PrivateKey, _ now: UInt64) throws -> [Digest32] {
            let before = try store.lastSequence()
            _ = try body(store, key, now)
            return try store.records(after: before).map { try Digest32(bytes: $0.id) }
        }
        let ids: [Digest32]
        let viaCLI = rng.chance(0.25)
        if viaCLI {
            let store = try Store(path: host.directory + "/store.sqlite")
            ids = try run(store, host.identity, host.clock.wallMillis())
            node.pickUpLocalWritesNow()  // the control channel's "sync"
        } else {
            ids = try node.write { store, key in try run(store, key, node.wallMillis()) }
        }
        model.acknowledged[host.index, default: []] += ids
        loop.note(host.index, "write \(label)\(viaCLI ? " (cli)" : ""): \(ids.count) records")
    }

    /// `count` bytes from the seed, eight per draw.
    private mutating func randomBytes(_ count: Int) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: (count + 7) / 8 * 8)
        bytes.withUnsafeMutableBytes { raw in
            for word in 0..<raw.count / 8 { raw.storeBytes(of: rng.next(), toByteOffset: word * 8, as: UInt64.self) }
        }
        return Array(bytes.prefix(count))
    }

    /// 20 characters of a push id's alphabet, from the seed.
    private mutating func pushPrefix() -> String {
        let alphabet = Array("-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz")
        return String((0..<20).map { _ in alphabet[Int.random(in: 0..<64, using: &rng)] })
    }

    // MARK: The hostile member

    /// A record signed by `hostile` into a victim's profile or messages, stamped backdated,
    /// close to now, ahead within the drift bound or beyond it, and spread by the hostile
    /// member's node like any of its own.
    mutating func hostileWrite(_ hostile: SimHost, victims: [SimHost], trueNowMillis: UInt64) throws {
        guard let node = hostile.node, hostile.frozenUntil <= loop.now, let victim = victims.randomElement(using: &rng) else { return }
        counter += 1
        let uid = victim.userID
        let theirs = model.messages.filter { $0.value.owner == uid }.keys.sorted()
        var pair: WritePair
        switch Int.random(in: 0..<6, using: &rng) {
        case 0:
            pair = WritePair(path: try Path(segments: Layout.profile(uid) + ["first_name"]), value: .string("pwned \(counter)"))
        case 1:
            pair = WritePair(path: try Path(segments: Layout.profile(uid)), value: .object(["first_name": .string("pwned"), "evil": .bool(true)]))
        case 2 where !theirs.isEmpty:
            let key = theirs.randomElement(using: &rng)!
            pair = WritePair(path: try Path(segments: Layout.message(key) + ["text"]), value: .string("pwned \(counter)"))
        case 3 where !theirs.isEmpty:
            pair = WritePair(path: try Path(segments: Layout.message(theirs.randomElement(using: &rng)!)), value: .null)
        case 4:
            // A new message under a key bound to the victim, claiming to be the victim's.
            let key = MessageKey.bind(pushPrefix(), to: uid)
            pair = WritePair(path: try Path(segments: Layout.message(key)),
                             value: .object(["senderId": .string(uid), "senderName": .string("forged"), "text": .string("forged \(counter)")]))
        default:
            // Under a key of the hostile member's own making, still claiming the victim as sender.
            pair = WritePair(path: try Path(segments: Layout.message(pushPrefix())),
                             value: .object(["senderId": .string(uid), "text": .string("impersonated \(counter)")]))
        }
        let millis: UInt64
        switch Int.random(in: 0..<4, using: &rng) {
        case 0:
            millis = 978_307_200_000 + UInt64.random(in: 0..<1_000_000, using: &rng)  // 2001
            faults.count(.hostileBackdated)
        case 1:
            millis = trueNowMillis + UInt64.random(in: 0..<2000, using: &rng)
        case 2:
            millis = trueNowMillis + UInt64.random(in: 60_000..<240_000, using: &rng)  // within the drift bound
        default:
            millis = trueNowMillis + 5 * 60_000 + UInt64.random(in: 2_000..<15_000, using: &rng)
            faults.count(.hostileFuture)
        }
        faults.count(.hostileRecord)
        let record = try Record.make(body: .write([pair]), clock: HybridLogicalClock.pack(millis: millis, counter: 0), signer: hostile.identity)
        try node.write { store, _ in _ = try store.ingest([record], nowMillis: max(millis, node.wallMillis())) }
        loop.note(hostile.index, "hostile write \(pair.path) at \(millis)")
    }
}
