import Crypto
import Sync
import Tree
import WebSocket
import Wire

/// The seed corpus of every target, made with lanchat's own encoders (and Protocol.md's vectors)
/// plus a few edge cases. `Tools/fuzz --make-corpus` writes them to Tools/fuzzing/corpus; they are
/// kept small (kilobytes) and committed.
public enum FuzzSeeds {
    /// (target, file name, bytes) for every seed.
    public static func all() -> [(target: FuzzTarget, name: String, bytes: [UInt8])] {
        var out = [(FuzzTarget, String, [UInt8])]()
        func add(_ target: FuzzTarget, _ name: String, _ bytes: [UInt8]) { out.append((target, name, bytes)) }

        // Records: Protocol.md's two vectors, and records the encoder makes from varied writes.
        let signer = try! PrivateKey(seedBytes: [UInt8](repeating: 1, count: 32))
        let records: [(String, [UInt8])] = [("vector-message", vectorMessage), ("vector-update", vectorUpdate)] + madeRecords(signer)
        for (name, bytes) in records {
            add(.record, name, bytes)
            add(.cbor, "record-" + name, bytes)
        }
        // Sealed writes' plaintexts (Protocol.md §11.4: a write body), as members seal them,
        // and the shapes the direct reader leaves to the general way.
        let message: JSONValue = .object(["date": .number(1_764_460_800_123), "senderId": .string(signer.publicKey.userID),
                                          "text": .string("Xin chào 👋"), "photoURL": .string("lanchat://files/images/a.png")])
        let group = "g_AAAAAAAAAAAAAAAAAAAA"
        let plaintexts: [(String, [WritePair])] = [
            ("message", [WritePair(path: try! Path("/conversations/\(group)/messages/-Nabcdefghijklmnopqr"), value: message)]),
            ("delete", [WritePair(path: try! Path("/conversations/\(group)/messages/-Nabcdefghijklmnopqr"), value: .null)]),
            ("typing", [WritePair(path: try! Path("/conversations/\(group)/typing/\(signer.publicKey.userID)"), value: .bool(true))]),
            ("float", [WritePair(path: try! Path("/conversations/\(group)/meta/score"), value: .number(0.5))]),
            ("pairs", [WritePair(path: try! Path("/conversations/\(group)/a"), value: .number(1)),
                       WritePair(path: try! Path("/conversations/\(group)/b"), value: .object(["c": .string("d")]))]),
        ]
        for (name, pairs) in plaintexts { add(.sealedPlaintext, name, try! PrivateBodies.encodeWrite(pairs)) }
        add(.sealedPlaintext, "respelled-key", CBOR.array([.array([.text("/conversations/\(group)/messages/m"),
                                                                   .map([CBORPair(.text("cafe\u{301}"), .unsigned(1))])])]).encoded())

        add(.record, "edge-unsigned", Array(vectorMessage.dropLast(66)))
        add(.record, "edge-version-2", [0x86, 0x02] + vectorMessage.dropFirst(2))

        // Deterministic CBOR: one item of every kind, and near misses.
        for (name, hexText) in [("uint", "1903e8"), ("nint", "3903e7"), ("bytes", "4401020304"), ("text", "63c3a961"),
                                ("array", "83010203"), ("map", "a26161016162820203"), ("simple", "83f4f5f6"),
                                ("half", "f93e00"), ("single", "fa47c35000"), ("double", "fb3ff199999999999a"),
                                ("nested", "818181818181818180"), ("noncanonical", "1817"), ("indefinite", "9fff"),
                                ("unsorted-map", "a2616201616101"), ("tag", "c11a514b67b0")] {
            add(.cbor, name, Hex.decode(hexText)!)
        }

        // Export streams.
        add(.export, "vector", vectorExport)
        add(.export, "empty", ExportStream.encode([]))
        add(.export, "made", ExportStream.encode(records.suffix(3).map(\.1)))
        add(.export, "edge-trailing", ExportStream.encode([vectorUpdate]) + [0])

        // Datagrams: mode 0 sealed as a node sends them; mode 1 plaintexts sealed by the target.
        let key = WireChecks.datagramKey
        let beacon = Beacon(author: signer.publicKey, instance: [UInt8](0..<8), port: 7000, recordCount: 2,
                            fingerprint: [UInt8](repeating: 0xAB, count: 16))
        add(.datagram, "beacon-sealed", [0] + Datagram.beacon(beacon).seal(key: key))
        add(.datagram, "push-sealed", [0] + Datagram.push(vectorUpdate).seal(key: key))
        add(.datagram, "vector-other-network", [0] + vectorBeaconDatagram)
        add(.datagram, "beacon-plain", [1, 1] + vectorBeaconPlaintext)
        add(.datagram, "push-plain", [1, 2] + CBOR.array([.unsigned(2), .bytes(vectorUpdate)]).encoded())

        // Session messages and frames.
        let hello = SessionMessage.hello(author: signer.publicKey, instance: [UInt8](0..<8), recordCount: 2,
                                         fingerprint: Array(0..<16))
        let peerItems = NegentropyChecks.itemSets[4]
        var negentropy = try! NegentropySession(items: peerItems)
        let firstMessage = try! negentropy.initiate()
        let messages: [(String, SessionMessage)] = [
            ("hello", hello), ("reconcile", .reconcile(firstMessage)), ("reconcile-reply", .reconcileReply([0x61])),
            ("records", .records([vectorUpdate])), ("records-empty", .records([])),
            ("want", .want([try! Digest32(bytes: BLAKE2b.hash(vectorMessage))])), ("want-empty", .want([])),
            ("want-chunks", .wantChunks([BLAKE2b.digest256([1])])), ("no-chunks", .noChunks([BLAKE2b.digest256([2])])),
            ("chunk", .chunk(BLAKE2b.digest256([3, 4]), [3, 4])),
        ]
        for (name, message) in messages { add(.sessionMessage, name, message.encoded()) }
        add(.frames, "all-messages", [5] + messages.flatMap { $0.1.framed() })
        add(.frames, "limit-4096", [0x80 | 9] + hello.framed() + [0, 0, 0x10, 0x01])

        // Negentropy: a peer's first message and replies, for each of our item sets.
        for (index, items) in NegentropyChecks.itemSets.enumerated() {
            var peer = try! NegentropySession(items: index == 4 ? NegentropyChecks.itemSets[2] : peerItems)
            let first = try! peer.initiate()
            add(.negentropyResponder, "initiate-set\(index)", [UInt8(index)] + first)
            var ours = try! NegentropySession(items: items)
            let ourFirst = try! ours.initiate()
            var responder = try! NegentropySession(items: index == 4 ? NegentropyChecks.itemSets[2] : peerItems)
            if let reply = try? responder.reconcile(ourFirst).next {
                add(.negentropyInitiator, "reply-set\(index)", [UInt8(index)] + reply)
                add(.negentropyInitiator, "reply-set\(index)-limit60000", [UInt8(index) | 0x80] + reply)
            }
        }
        add(.negentropyResponder, "version-only", [0, 0x61])
        add(.negentropyResponder, "old-version", [1, 0x60, 0x00])
        add(.negentropyInitiator, "end", [4, 0x61])

        // Noise: message 1 from an initiator, then the honest message 3 and a tampered one.
        var initiator = try! NoiseHandshake(role: .initiator, localStatic: NoiseChecks.initiatorStatic, psk: NoiseChecks.psk,
                                            prologue: NoiseChecks.prologue, ephemeral: NoiseChecks.initiatorEphemeral)
        add(.noiseResponder, "message1", [0] + (try! initiator.writeMessage(payload: [])))
        add(.noiseResponder, "message3", [1] + NoiseChecks.honest.message3)
        add(.noiseResponder, "message3-flipped", [2, 0, 5, 1])
        add(.noiseResponder, "message3-extended", [2, 2, 0, 0, 1, 2, 3])

        // The peer session: frames after the handshake, and a handshake message 1 before it.
        let source = PeerSessionChecks.source
        var knownIDs = Array(source.records.keys.prefix(3))
        knownIDs.sort()
        let sessionFirst = try! { var s = try NegentropySession(items: source.items, frameSizeLimit: PeerSession.reconcileFrameLimit); return try s.initiate() }()
        var replier = try! NegentropySession(items: peerItems)
        let reply = try! replier.reconcile(sessionFirst).next ?? [0x61]
        let peerHello = SessionMessage.hello(author: PeerSessionChecks.peerIdentity.publicKey, instance: PeerSessionChecks.peerInstance,
                                             recordCount: 1, fingerprint: [UInt8](repeating: 0, count: 16))
        add(.peerSession, "established-want", [1, 0] + SessionMessage.want(knownIDs).framed())
        add(.peerSession, "established-want-repeated", [1, 0] + SessionMessage.want([knownIDs[0], knownIDs[0], knownIDs[0]]).framed())
        let chunkHashes = Array(source.chunks.keys).sorted()
        add(.peerSession, "established-want-chunks", [1, 0] + SessionMessage.wantChunks(chunkHashes + [BLAKE2b.digest256([9])]).framed())
        add(.peerSession, "established-want-chunk-repeated", [1, 0] + SessionMessage.wantChunks([chunkHashes[0], chunkHashes[0], chunkHashes[0]]).framed())
        add(.peerSession, "established-chunk", [1, 0] + SessionMessage.chunk(BLAKE2b.digest256([7]), [7]).framed()
            + SessionMessage.noChunks([BLAKE2b.digest256([8])]).framed())
        add(.peerSession, "established-reconcile", [1, 0] + SessionMessage.reconcile(firstMessage).framed())
        add(.peerSession, "established-records", [1, 0] + SessionMessage.records([vectorUpdate]).framed())
        add(.peerSession, "established-second-hello", [1, 0] + peerHello.framed())
        add(.peerSession, "established-split", [1, 7] + SessionMessage.want(knownIDs).framed() + SessionMessage.reconcileReply([0x61]).framed())
        add(.peerSession, "no-hello-hello", [2, 0] + peerHello.framed() + SessionMessage.want(knownIDs).framed())
        var negated = PeerSessionChecks.peerIdentity.publicKey.bytes
        negated[31] ^= 0x80
        add(.peerSession, "no-hello-negated-author", [2, 0] + SessionMessage.hello(author: try! PublicKey(bytes: negated), instance: PeerSessionChecks.peerInstance,
                                                                                   recordCount: 1, fingerprint: [UInt8](repeating: 0, count: 16)).framed())
        add(.peerSession, "no-hello-want", [2, 0] + SessionMessage.want(knownIDs).framed())
        add(.peerSession, "round-reply", [3, 0] + SessionMessage.reconcileReply(reply).framed())
        add(.peerSession, "raw-after-handshake", [0x81, 0, 0, 20] + [UInt8](repeating: 9, count: 20))
        var dialer = try! NoiseHandshake(role: .initiator, localStatic: PeerSessionChecks.peerIdentity.x25519(),
                                         psk: PeerSessionChecks.network.sessionPSK.copyBytes(), prologue: PeerSession.prologue,
                                         ephemeral: NoiseChecks.initiatorEphemeral)
        add(.peerSession, "handshake-message1", [0, 0] + PeerSessionChecks.noiseFrame(try! dialer.writeMessage(payload: [])))

        // HTTP requests as the local API receives them.
        let requests = [
            "GET /a.json?auth=owner HTTP/1.1\r\nHost: 127.0.0.1:9000\r\n\r\n",
            "PUT /a.json HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer owner\r\nContent-Length: 19\r\n\r\n{\"b\":1,\"c\":{\"d\":2}}",
            "PATCH /a.json?print=silent HTTP/1.1\r\nHost: h\r\nContent-Length: 17\r\nExpect: 100-continue\r\n\r\n{\"c/d\":3,\"e\":null}",
            "GET /scores.json?orderBy=%22n%22&limitToFirst=2&auth=owner HTTP/1.1\r\nHost: h\r\n\r\nGET /.lanchat/status HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n",
            "POST /chat.json HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n5;x=y\r\n{\"t\":\r\n3\r\n\"a\"\r\n1\r\n}\r\n0\r\nTrailer: 1\r\n\r\n",
            "GET /chat.json HTTP/1.0\r\nAccept: text/event-stream\r\n\r\n",
            "DELETE /a/%C3%A9.json HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\nContent-Length: 0\r\n\r\n",
        ]
        for (index, request) in requests.enumerated() {
            add(.http, "request\(index)", [UInt8(index * 2 % 256)] + Array(request.utf8))
        }
        add(.http, "small-limits", [1] + Array(requests[1].utf8))

        // Websocket streams as a Firebase SDK sends them: masked text frames of protocol messages,
        // one split into a frame count and pieces, a fragmented one, a ping and a close.
        let realtimeMessages = [
            #"{"t":"d","d":{"r":1,"a":"s","b":{"c":{"sdk.js.10-12-0":1}}}}"#,
            #"{"t":"d","d":{"r":2,"a":"gauth","b":{"cred":"owner"}}}"#,
            #"{"t":"d","d":{"r":3,"a":"q","b":{"p":"/chat","q":{"i":"date","l":20,"vf":"r","sp":5,"sn":"k","sin":false},"t":1,"h":""}}}"#,
            #"{"t":"d","d":{"r":4,"a":"p","b":{"p":"/counter","d":6,"h":"w28swksk9+tXf5jEdS9R5oSFAv8="}}}"#,
            #"{"t":"d","d":{"r":5,"a":"o","b":{"p":"/presence/me","d":{"at":{".sv":"timestamp"}}}}}"#,
            #"{"t":"c","d":{"t":"p","d":{}}}"#, "0",
        ]
        let mask: [UInt8] = [0x37, 0xFA, 0x21, 0x3D]
        for (index, message) in realtimeMessages.enumerated() {
            add(.websocket, "message\(index)", [UInt8(index * 2 % 256)] + WebSocketFrameWriter.frame(.text, Array(message.utf8), mask: mask))
        }
        let split = Array(realtimeMessages[2].utf8)
        add(.websocket, "split", [0] + WebSocketFrameWriter.frame(.text, Array("2".utf8), mask: mask)
            + WebSocketFrameWriter.frame(.text, split[..<40], mask: mask) + WebSocketFrameWriter.frame(.text, split[40...], mask: mask))
        add(.websocket, "fragmented", [3] + WebSocketFrameWriter.frame(.text, split[..<40], fin: false, mask: mask)
            + WebSocketFrameWriter.frame(.ping, [1, 2], mask: mask) + WebSocketFrameWriter.frame(.continuation, split[40...], mask: mask)
            + WebSocketFrameWriter.close(.normal, reason: "bye").enumerated().map { $0.offset == 1 ? $0.element | 0x80 : $0.element })
        add(.websocket, "small-bound", [1] + WebSocketFrameWriter.frame(.binary, [UInt8](repeating: 7, count: 300), mask: mask))

        // JSON, paths and queries.
        let documents = [
            "{\"b\":1,\"c\":{\"d\":2}}", "[1,null,{\"x\":[true,false]},\"s\"]", "-0.5e-3", "\"\\u00e9\\ud83d\\ude00\\n\"",
            "{\"0\":\"a\",\"1\":\"b\",\"3\":\"d\"}", "{\"a\":{},\"b\":null,\"c\":[]}", "1e308", "123456789012345678901234567890",
            "{\"senderId\":\"iojj3XQJ8ZX9UtstPLpdcspnCb8dlBIb83SIAbQPb1w\",\"date\":1764460800000,\"text\":\"hello\"}",
            " \t\r\n{\"nested\":{\"a\":{\"b\":{\"c\":[[[[1]]]]}}}} ", "{\"a\":1,\"a\":2}", "{\".sv\":\"timestamp\"}",
        ]
        for (index, document) in documents.enumerated() { add(.json, "doc\(index)", Array(document.utf8)) }
        let paths = ["", "/", "/a/b", "a//b/", "/users/iojj3XQJ8ZX9UtstPLpdcspnCb8dlBIb83SIAbQPb1w/first_name",
                     "/conversations/general/messages/-OAbCdEfGhIjKlMnOpQr", "/Nguyễn/😀", "/a.b", "/a\u{7f}",
                     "/" + Array(repeating: "k", count: 33).joined(separator: "/")]
        for (index, path) in paths.enumerated() { add(.path, "path\(index)", Array(path.utf8)) }
        let queries = ["orderBy=\"n\"&limitToFirst=2", "orderBy=\"$key\"&startAt=\"a\"&endAt=\"c\"",
                       "orderBy=\"$value\"&equalTo=5", "orderBy=\"n/deep\"&limitToLast=1", "orderBy=\"$priority\"",
                       "startAt=1", "orderBy=\"s\"&startAt=\"x\"&limitToFirst=0&shallow=true&auth=owner",
                       "orderBy=\"$key\"&orderBy=\"$value\""]
        for (index, query) in queries.enumerated() { add(.query, "query\(index)", Array(query.utf8)) }
        return out
    }

    /// Records from the real encoder: numbers, floats, nested objects, deletes, several pairs.
    static func madeRecords(_ signer: PrivateKey) -> [(String, [UInt8])] {
        let writes: [(String, [(String, JSONValue)])] = [
            ("numbers", [("/numbers", .object(["pi": .number(3.14159), "big": .number(123456789012), "neg": .number(-7),
                                               "half": .number(0.5), "tiny": .number(1e-300), "max": .number(9007199254740994)]))]),
            ("delete", [("/a/b", .null)]),
            ("root-bool", [("", .bool(true))]),
            ("profile", [("/users/" + signer.publicKey.userID, .object(["name": .string("Nguyễn Văn An"), "email": .string("an@example.vn")]))]),
            ("pairs", [("/x", .number(1)), ("/y/z", .string("")), ("/zz", .object(["a": .object(["b": .bool(false)])]))]),
        ]
        let clock = UInt64(1_764_460_800_000) << 16
        var out = writes.enumerated().map { index, write in
            let pairs = write.1.map { WritePair(path: try! Path($0.0), value: $0.1) }
            let record = try! Record.make(body: .write(pairs), clock: clock + UInt64(index), signer: signer)
            return (write.0, record.encoded)
        }
        let content = [UInt8](repeating: 0x5A, count: 10_000)
        let chunks = stride(from: 0, to: content.count, by: 4096).map { BLAKE2b.digest256(content[$0..<min($0 + 4096, content.count)]) }
        let manifest = try! Record.make(body: .manifest(Manifest(blob: BLAKE2b.digest256(content), size: UInt64(content.count),
                                                                 contentType: "image/png", chunkSize: 4096, chunks: chunks)),
                                        clock: clock + 10, signer: signer)
        out.append(("manifest", manifest.encoded))
        out.append(("file", try! Record.make(body: .file(FileEntry(path: "images/a.png", manifest: manifest.id)), clock: clock + 11, signer: signer).encoded))
        out.append(("file-deleted", try! Record.make(body: .file(FileEntry(path: "images/a.png", manifest: nil)), clock: clock + 12, signer: signer).encoded))
        // Private conversations (Protocol.md §11): the shapes of a key record, a sealed write and
        // a leave, with bytes that decode (what they seal does not matter to the decoder).
        let group = "g_AAAAAAAAAAAAAAAAAAAA"
        let key = GroupKeyBody(conversation: group, epoch: 1, salt: [UInt8](repeating: 0x5A, count: 32),
                               boxes: [[UInt8](repeating: 1, count: 80), [UInt8](repeating: 2, count: 80)], meta: [UInt8](repeating: 3, count: 64))
        let keyRecord = try! Record.make(body: .groupKey(key), clock: clock + 13, signer: signer)
        out.append(("private-key", keyRecord.encoded))
        out.append(("private-sealed-write", try! Record.make(body: .sealedWrite(SealedWriteBody(conversation: group, epoch: keyRecord.id,
                                                                                                  ciphertext: [UInt8](repeating: 4, count: 296))),
                                                             clock: clock + 14, signer: signer).encoded))
        out.append(("private-leave", try! Record.make(body: .leave(LeaveBody(conversation: "d_AAAAAAAAAAAAAAAAAAAA")), clock: clock + 15, signer: signer).encoded))
        return out
    }

    static let vectorMessage = Hex.decode("""
        86010158208a88e3dd7409f195fd52db2d3cba5d72ca6709bf1d94121bf3748801b40f6f5c1b019ad0e14e900000818278342f636f6e766572736174696f6e73\
        2f67656e6572616c2f6d657373616765732f2d4f4162436445664768496a4b6c4d6e4f705172a464646174651b0000019ad20f280064746578746568656c6c6f\
        6873656e6465724964782b696f6a6a3358514a385a583955747374504c70646373706e436238646c42496238335349416251506231776a73656e6465724e616d\
        656b416c69636520536d69746858407c88558a46049657a4964497cf66c1e3931add20fc8dde02720b10da7b3176652fd2821070fa526039f3b48ea8ba4eda20\
        c461d385df03385fc2c664c71e770a
        """)!
    static let vectorUpdate = Hex.decode("""
        86010158208a88e3dd7409f195fd52db2d3cba5d72ca6709bf1d94121bf3748801b40f6f5c1b019ad0e14e9000018382642f612f62f93e0082642f612f63f682\
        783d2f75736572732f696f6a6a3358514a385a583955747374504c70646373706e436238646c42496238335349416251506231772f66697273745f6e616d6568\
        4e677579e1bb856e5840a31c8ee97ae3f1d92a76a9c9aacea761abf8d3e8f91a65f3f1a548006fc2146af6a5da2cf95e41ad99c9d45a582ca6191ab54435716a\
        f0e041732f7633abc00b
        """)!
    static var vectorExport: [UInt8] { ExportStream.encode([vectorMessage, vectorUpdate]) }
    static let vectorBeaconPlaintext = Hex.decode("""
        860158208a88e3dd7409f195fd52db2d3cba5d72ca6709bf1d94121bf3748801b40f6f5c480001020304050607191b58025000112233445566778899aabbccdd\
        eeff
        """)!
    static let vectorBeaconDatagram = Hex.decode("""
        01000102030405060708090a0b0c0d0e0f101112131415161790e7a0bd8bec25dee98e328124d395cb1039d0dce16878e0335cf573fc2f3b5e161bb75dee61f5\
        770f735c04958d9e29c676ac59dbba86f1f8895018ad6f3ab96c2d96dfda7873796ee5ac5a4081d178c802
        """)!
}
