import Crypto
import Dispatch
import Foundation
import Store
import TestSupport
import Tree
import Wire

/// A year of chat for the scale benchmark, written as an export stream: many authors whose
/// names and messages are in many scripts, conversations of very unequal sizes (a few hold
/// most of the messages), photo messages with their files, edits and deletes that arrive
/// after newer messages. Generated from a seed; signed on every core.
struct ScaleData {
    let records: Int
    let authors: [PrivateKey]
    let conversations: [(id: String, members: [Int], weight: Double)]

    /// What was written: counts by kind and the total size of the records.
    struct Summary {
        var records = 0, bytes = 0
        var profiles = 0, conversations = 0, messages = 0, photos = 0, edits = 0, deletes = 0
        var largestConversation = (id: "", messages: 0)
        var messagesByConversation: [String: Int] = [:]
        /// A sample of records (decoded) for the verify ceiling.
        var sample: [Record] = []
    }

    static let names: [(String, String)] = [
        ("Nguyễn Văn", "An"), ("Trần Thị", "Đào"), ("Lê Hoàng", "Minh"), ("Phạm Thu", "Hà"), ("Bùi Thị", "Bích"),
        ("김", "민수"), ("박", "준영"), ("이", "서연"), ("최", "지우"), ("Alice", "Smith"), ("Bob", "Jones"),
        ("Jürgen", "Müller"), ("Zoë", "Dupont"), ("محمد", "علي"), ("فاطمة", "الزهراء"), ("Иван", "Петров"),
        ("Анна", "Смирнова"), ("王", "伟"), ("李", "娜"), ("राहुल", "शर्मा"), ("प्रिया", "पटेल"), ("佐藤", "健"),
        ("鈴木", "花子"), ("Γιώργος", "Παπαδόπουλος"), ("สมชาย", "ใจดี"), ("José", "García"), ("Chioma", "Okafor"),
    ]

    static let phrases = [
        "Chào buổi sáng mọi người!", "Hôm nay trời đẹp quá, đi cà phê không?", "Mình gửi tài liệu rồi nhé.",
        "안녕하세요, 오늘 회의는 몇 시예요?", "점심 같이 먹을래요?", "사진 잘 받았어요, 감사합니다!",
        "See you at the standup in five minutes.", "Can someone review my pull request?", "Lunch is on me today 🍜",
        "مرحبا، كيف حالك اليوم؟", "سأرسل الملف بعد قليل.", "Привет! Как дела?", "Встреча перенесена на завтра.",
        "今天的会议改到下午三点。", "我们周末去爬山吧！", "नमस्ते, आप कैसे हैं?", "कल मिलते हैं।", "了解しました、よろしくお願いします。",
        "Καλημέρα σε όλους!", "สวัสดีครับ ทุกคน", "¿Quién viene a la fiesta el sábado? 🎉", "Ça marche, à demain !",
        "The build is green again ✅", "Did anyone see my charger?", "Thanks, that fixed it.",
    ]

    init(records: Int, seed: UInt64) {
        self.records = records
        var rng = SplitMix64(seed: seed)
        let authorCount = max(20, records / 2_000)
        authors = (0..<authorCount).map { _ in PrivateKey() }
        let conversationCount = max(10, records / 10_000)
        // Sizes by rank as 1/rank: the largest holds a fifth of the messages at 100 conversations.
        conversations = (0..<conversationCount).map { rank in
            let size = 2 + Int(rng.next() % 6)
            let members = (0..<size).map { _ in Int(rng.next() % UInt64(authorCount)) }
            return ("c\(rank)-" + String(rng.next() % 1_000_000, radix: 36), Array(Set(members)).sorted(), 1 / Double(rank + 1))
        }
    }

    /// Writes the stream to `path`; returns what it holds.
    func write(to path: String, seed: UInt64) throws -> Summary {
        guard FileManager.default.createFile(atPath: path, contents: nil), let out = FileHandle(forWritingAtPath: path) else {
            throw BenchError("cannot create \(path)")
        }
        defer { try? out.close() }
        try out.write(contentsOf: ExportStream.header())
        var summary = Summary()
        var rng = SplitMix64(seed: seed)
        var pushIDs = PushIDGenerator()
        let now = UInt64(Date().timeIntervalSince1970 * 1000) - 60_000
        let year: UInt64 = 365 * 86_400_000
        let start = now - year
        var pending: [(body: RecordBody, clock: UInt64, author: Int)] = []
        // Edits and deletes come later than the message they change, so they wait here until
        // the stream's time passes theirs.
        var later: [(body: RecordBody, clock: UInt64, author: Int)] = []
        let totalWeight = conversations.reduce(0) { $0 + $1.weight }

        func flush() throws {
            let signed = sign(pending)
            pending.removeAll(keepingCapacity: true)
            var buffer = [UInt8]()
            for record in signed {
                buffer += ExportStream.frame(record.encoded)
                summary.records += 1
                summary.bytes += record.encoded.count
                if summary.sample.count < 20_000, rng.next() % 8 == 0 { summary.sample.append(record) }
            }
            try out.write(contentsOf: buffer)
        }
        func emit(_ body: RecordBody, clock: UInt64, author: Int) throws {
            pending.append((body, clock, author))
            if pending.count == 4_096 { try flush() }
        }

        // Profiles, then each conversation's meta, at the start of the year.
        for (index, author) in authors.enumerated() {
            let (first, last) = ScaleData.names[index % ScaleData.names.count]
            let uid = author.publicKey.userID
            let profile: JSONValue = .object([
                "first_name": .string(first), "last_name": .string(last + (index >= ScaleData.names.count ? " \(index)" : "")),
                "email": .string("user\(index)@example.org"), "platform": .string(["ios", "android", "web", "cli"][index % 4]),
                "picture": .string("images/\(uid)_profile_picture.jpg"),
            ])
            try emit(.write([WritePair(path: try Path(segments: ["users", uid]), value: profile)]), clock: (start + UInt64(index)) << 16, author: index)
            summary.profiles += 1
        }
        for (index, conversation) in conversations.enumerated() {
            var members = [String: JSONValue]()
            for member in conversation.members { members[authors[member].publicKey.userID] = true }
            let meta: JSONValue = .object(["title": .string("Room \(index) · \(ScaleData.names[index % ScaleData.names.count].0)"), "members": .object(members)])
            try emit(.write([WritePair(path: try Path(segments: ["conversations", conversation.id, "meta"]), value: meta)]),
                     clock: (start + 1_000 + UInt64(index)) << 16, author: conversation.members[0])
            summary.conversations += 1
        }

        // Messages through the year, one conversation picked by weight each time.
        var index = 0
        while summary.records + pending.count + later.count < records {
            let millis = start + 2_000 + UInt64(index) * (year / UInt64(max(records, 1)))
            index += 1
            while let next = later.first, next.clock >> 16 <= millis {
                later.removeFirst()
                try emit(next.body, clock: next.clock, author: next.author)
            }
            var pick = Double(rng.next() % 1_000_000) / 1_000_000 * totalWeight
            var conversation = conversations[0]
            for candidate in conversations {
                pick -= candidate.weight
                if pick <= 0 { conversation = candidate; break }
            }
            let authorIndex = conversation.members[Int(rng.next() % UInt64(conversation.members.count))]
            let author = authors[authorIndex]
            let uid = author.publicKey.userID
            let key = MessageKey.bind(pushIDs.next(nowMillis: millis, using: &rng), to: uid)
            let path = try Path(segments: ["conversations", conversation.id, "messages", key])
            let (first, last) = ScaleData.names[authorIndex % ScaleData.names.count]
            var fields: [String: JSONValue] = ["senderId": .string(uid), "senderName": .string("\(first) \(last)"), "date": .number(Double(millis))]
            let roll = rng.next() % 1_000
            if roll < 20, summary.records + pending.count + later.count + 3 <= records {
                // A photo: its manifest and file entry, then the message that shows it.
                let storagePath = "images/\(uid)_\(key).jpg"
                let size = 20_000 + Int(rng.next() % 180_000)
                let chunks = (0..<((size + Store.chunkSize - 1) / Store.chunkSize)).map { _ in ScaleData.digest(&rng) }
                let manifest = Manifest(blob: ScaleData.digest(&rng), size: UInt64(size), contentType: "image/jpeg",
                                        chunkSize: UInt64(Store.chunkSize), chunks: chunks)
                let manifestRecord = try Record.make(body: .manifest(manifest), clock: millis << 16, signer: author)
                try emit(.manifest(manifest), clock: millis << 16, author: authorIndex)
                try emit(.file(FileEntry(path: storagePath, manifest: manifestRecord.id)), clock: millis << 16 | 1, author: authorIndex)
                fields["photoURL"] = .string("gs://lanchat/" + storagePath)
                summary.photos += 1
            } else {
                let count = 1 + Int(rng.next() % 3)
                fields["text"] = .string((0..<count).map { _ in ScaleData.phrases[Int(rng.next() % UInt64(ScaleData.phrases.count))] }.joined(separator: " "))
            }
            try emit(.write([WritePair(path: path, value: .object(fields))]), clock: millis << 16 | 2, author: authorIndex)
            summary.messages += 1
            summary.messagesByConversation[conversation.id, default: 0] += 1
            if roll >= 990 {
                // An edit within the next day, or (one in four) a delete.
                let when = min(now, millis + 1 + rng.next() % 86_400_000) << 16
                if roll >= 997 {
                    later.append((.write([WritePair(path: path, value: .null)]), when, authorIndex))
                    summary.deletes += 1
                } else {
                    later.append((.write([WritePair(path: try path.appending("text"), value: .string("(edited) " + ScaleData.phrases[Int(rng.next() % 25)]))]), when, authorIndex))
                    summary.edits += 1
                }
                later.sort { $0.clock < $1.clock }
            }
        }
        for next in later { try emit(next.body, clock: next.clock, author: next.author) }
        try flush()
        try out.write(contentsOf: ExportStream.trailer(count: summary.records))
        if let largest = summary.messagesByConversation.max(by: { $0.value < $1.value }) {
            summary.largestConversation = (largest.key, largest.value)
        }
        return summary
    }

    /// Signs a block of records on every core, keeping their order.
    private func sign(_ block: [(body: RecordBody, clock: UInt64, author: Int)]) -> [Record] {
        final class Slots: @unchecked Sendable { var records: [Record?]; init(_ n: Int) { records = Array(repeating: nil, count: n) } }
        let slots = Slots(block.count)
        let authors = authors
        let input = UncheckedBlock(block)
        slots.records.withUnsafeMutableBufferPointer { buffer in
            let out = UncheckedBuffer(buffer)
            DispatchQueue.concurrentPerform(iterations: (input.value.count + 255) / 256) { part in
                for i in (part * 256)..<min((part + 1) * 256, input.value.count) {
                    let item = input.value[i]
                    out.buffer[i] = try? Record.make(body: item.body, clock: item.clock, signer: authors[item.author])
                }
            }
        }
        return slots.records.map { $0! }
    }

    private struct UncheckedBlock: @unchecked Sendable {
        let value: [(body: RecordBody, clock: UInt64, author: Int)]
        init(_ value: [(body: RecordBody, clock: UInt64, author: Int)]) { self.value = value }
    }

    private struct UncheckedBuffer: @unchecked Sendable {
        let buffer: UnsafeMutableBufferPointer<Record?>
        init(_ buffer: UnsafeMutableBufferPointer<Record?>) { self.buffer = buffer }
    }

    static func digest(_ rng: inout SplitMix64) -> Digest32 {
        var bytes = [UInt8]()
        for _ in 0..<4 { withUnsafeBytes(of: rng.next()) { bytes += $0 } }
        return try! Digest32(bytes: bytes)
    }
}
