/// Every limit that Protocol.md §9 and the README state, and the tests that show each one at the
/// limit and just past it. `LimitCoverageTests` reads both documents and fails when a limit is
/// stated there but missing here, when an entry here names a limit the documents no longer
/// state, or when a test named here does not exist.
///
/// A test is named `Directory/Type.function`: `Directory` under Tests/, the suite's type, and the
/// `@Test` function.
struct CoveredLimit: Sendable {
    enum Source: Sendable, CaseIterable {
        /// A row of the table in Protocol.md §9, named by its first cell as written.
        case protocolTable
        /// A phrase of the prose of Protocol.md §9 (the bans), as written.
        case protocolProse
        /// A row of the README's table of limits (between `<!-- limits -->` markers).
        case readmeTable
        /// A phrase of the README's prose that states a limit, as written.
        case readmeProse
    }

    let source: Source
    let limit: String
    let tests: [String]

    init(_ source: Source, _ limit: String, _ tests: [String]) {
        self.source = source
        self.limit = limit
        self.tests = tests
    }
}

enum LimitCoverage {
    static let all: [CoveredLimit] = protocolTable + protocolProse + readme

    static let protocolTable: [CoveredLimit] = [
        .init(.protocolTable, "record size", ["WireTests/RecordAndDatagramLimitTests.recordSize", "WireTests/RecordTests.distinctErrors"]),
        .init(.protocolTable, "pairs per write", ["WireTests/RecordAndDatagramLimitTests.pairsPerWrite", "LocalAPITests/APILimitTests.pathsPerUpdate"]),
        .init(.protocolTable, "large write content", ["StoreTests/LargeWriteTests.recordBounds", "StoreTests/LargeWriteTests.invalidContent",
                                                      "WireTests/LargeWriteLimitTests.pairCount", "LocalAPITests/APILimitTests.pathsPerUpdate",
                                                      "WireTests/PairStreamTests.rememberedKeys", "WireTests/PairStreamTests.asciiTwinsInLargeObjects",
                                                      "WireTests/PairStreamTests.zonePairItems", "StoreTests/LargeWriteMemoryTests.onePairOfManyLeaves"]),
        .init(.protocolTable, "datagram size", ["WireTests/RecordAndDatagramLimitTests.datagramSize"]),
        .init(.protocolTable, "record pushed by datagram", ["NodeTests/DiscoveryKnobTests.datagramRecordSize"]),
        .init(.protocolTable, "Noise message", ["SyncTests/SessionLimitTests.noiseMessageBytes", "SyncTests/NoiseHandshakeTests.lengths",
                                                "SyncTests/NoiseHandshakeTests.payloadLimit", "SyncTests/NoiseTransportTests.limits"]),
        .init(.protocolTable, "session frame", ["SyncTests/SessionLimitTests.frameBytes", "NodeTests/QueuedOutputTests.oversizedFrameBansIdentity", "WireTests/SessionFramingTests.appendAndBounds"]),
        .init(.protocolTable, "session message CBOR", ["WireTests/RecordLimitTests.levels", "WireTests/RecordLimitTests.items",
                                                       "SyncTests/SessionLimitTests.recordsPerMessage"]),
        .init(.protocolTable, "records per `records`", ["SyncTests/SessionLimitTests.recordsPerMessage", "NodeTests/MessageLimitBanTests.messagesAtAndPastTheirLimits", "SyncTests/SessionLimitTests.recordBatches"]),
        .init(.protocolTable, "ids per `want`", ["SyncTests/SessionLimitTests.wantIDs", "NodeTests/MessageLimitBanTests.messagesAtAndPastTheirLimits", "SyncTests/RoundTests.wantAnswerCapped",
                                                 "SyncTests/RoundTests.repeatedRangesMoveNothingTwice"]),
        .init(.protocolTable, "output queued for a peer", ["NodeTests/QueuedOutputTests.readingStopsPastQueuedBytes"]),
        .init(.protocolTable, "hashes per `want chunks` / `no chunks`", ["SyncTests/SessionLimitTests.chunkHashes", "NodeTests/MessageLimitBanTests.messagesAtAndPastTheirLimits"]),
        .init(.protocolTable, "chunk", ["SyncTests/SessionLimitTests.chunkBytes", "NodeTests/MessageLimitBanTests.messagesAtAndPastTheirLimits", "StoreTests/FileStoreTests.chunkBoundaries"]),
        .init(.protocolTable, "chunk requests in flight per peer", ["NodeTests/SyncKnobTests.chunkWindowOfANode", "SyncTests/ChunkFetcherTests.spreadAndWindow",
                                                                   "SyncTests/ChunkFetcherTests.timeoutRequeues"]),
        .init(.protocolTable, "chunk requests waiting to be answered for a peer", ["NodeTests/ChunkFloodTests.floodThrottled"]),
        .init(.protocolTable, "blob", ["WireTests/RecordAndDatagramLimitTests.blobSize", "LocalAPITests/APILimitTests.uploadSize",
                                       "StoreTests/FileStoreTests.refusals"]),
        .init(.protocolTable, "files fetched without being asked", ["NodeTests/SyncKnobTests.eagerFetchQuota"]),
        .init(.protocolTable, "Negentropy message", ["SyncTests/NegentropyLimitTests.sentMessageSize", "SyncTests/NegentropyLimitTests.acceptedMessageSize",
                                                     "SyncTests/NegentropyLimitTests.acceptedRanges"]),
        .init(.protocolTable, "Negentropy split", ["SyncTests/NegentropyLimitTests.splitAndList", "SyncTests/NegentropyEncodingTests.initialMessages"]),
        .init(.protocolTable, "sealed keys per key record", ["PrivateTests/PrivateLimitTests.boxesPerKeyRecord"]),
        .init(.protocolTable, "box trials of key records", ["PrivateTests/KeyTrialQueueTests.authorBudget", "PrivateTests/KeyTrialQueueTests.nodeBudget",
                                                             "PrivateTests/KeyTrialQueueTests.turns",
                                                             "StoreTests/KeyTrialFloodTests.floodDoesNotDelayOthers",
                                                             "StoreTests/KeyTrialFloodTests.neverDropped",
                                                             "StoreTests/KeyTrialFloodTests.ownRecordsAtOnce"]),
        .init(.protocolTable, "private conversation title", ["PrivateTests/PrivateLimitTests.titleBytes"]),
        .init(.protocolTable, "epochs of a private conversation", ["PrivateTests/PrivateLimitTests.epochNumbers",
                                                                   "PrivateTests/PrivateLimitTests.oneKeyRecordPerEpochNumber",
                                                                   "StoreTests/PrivateFloodTests.keyRecordFlood"]),
        .init(.protocolTable, "sessions per node", ["NodeTests/SessionKnobTests.sessionCap"]),
        .init(.protocolTable, "handshake and hello", ["NodeTests/SessionKnobTests.handshakeTimeout"]),
        .init(.protocolTable, "session idle", ["NodeTests/SessionKnobTests.idleTimeout"]),
        .init(.protocolTable, "beacon interval / peer expiry", ["NodeTests/DiscoveryKnobTests.beaconIntervalAndExpiry"]),
        .init(.protocolTable, "anti-entropy interval", ["NodeTests/SyncKnobTests.antiEntropyInterval", "NodeTests/SyncKnobTests.roundDeferral"]),
        .init(.protocolTable, "rounds per session", ["SyncTests/RoundTests.oneRoundPerSession"]),
        .init(.protocolTable, "ids asked for in one round", ["SyncTests/RoundTests.roundAskingEnds"]),
        .init(.protocolTable, "ids offered in one round", ["SyncTests/RoundTests.roundOfferingEnds", "SyncTests/RoundTests.offersSentInParts",
                                                        "NodeTests/QueuedOutputTests.recordsFoundMissingGoOutInParts"]),
        .init(.protocolTable, "live value", ["SyncTests/LiveTableTests.sizes"]),
        .init(.protocolTable, "typing and status values held", ["SyncTests/LiveTableTests.valuesHeld"]),
        .init(.protocolTable, "live values taken from one author", ["SyncTests/LiveTableTests.rate"]),
        .init(.protocolTable, "read receipts held", ["SyncTests/LiveTableTests.receiptsHeld", "LocalAPITests/LiveStateTests.receiptsConverge"]),
        .init(.protocolTable, "receipts taken from one author", ["SyncTests/LiveTableTests.receiptRate"]),
        .init(.protocolTable, "sealed live values relayed unopened (§11.8)", ["SyncTests/SealedLiveRelayTests.onceAndRate",
                                                                            "SyncTests/SealedLiveRelayTests.bounds"]),
        .init(.protocolTable, "sealed live values waiting for their key record", ["LocalAPITests/PrivateLiveTests.pendingBounds"]),
        .init(.protocolTable, "away", ["LocalAPITests/LiveStateTests.presence"]),
    ]

    /// The ban paragraph: each offence in its list, the ban's length, and each bullet.
    static let protocolProse: [CoveredLimit] = [
        .init(.protocolProse, "a malformed or undecryptable message", ["SyncTests/PeerSessionTests.pushAndGarbage", "NodeTests/BanTests.failedHandshakeBansEndpoint"]),
        .init(.protocolProse, "a failed handshake", ["NodeTests/BanTests.failedHandshakeBansEndpoint", "SyncTests/PeerSessionTests.wrongNetworkKey"]),
        .init(.protocolProse, "a `hello` that does not match its keys", ["SyncTests/PeerSessionTests.wrongIdentity"]),
        .init(.protocolProse, "an invalid record", ["NodeTests/BanTests.invalidRecordBansIdentity"]),
        .init(.protocolProse, "a chunk that does not match its hash", ["NodeTests/CorruptChunkTests.corruptChunkRefetched"]),
        .init(.protocolProse, "a frame above its limit", ["SyncTests/SessionLimitTests.frameBytes", "NodeTests/QueuedOutputTests.oversizedFrameBansIdentity"]),
        .init(.protocolProse, "a malformed Negentropy message", ["SyncTests/SessionLimitTests.reconcileViolations"]),
        .init(.protocolProse, "a `reconcile reply` with no round running", ["SyncTests/SessionLimitTests.reconcileViolations"]),
        .init(.protocolProse, "is disconnected and banned for 60 seconds", ["NodeTests/SessionKnobTests.banLastsBanSeconds"]),
        .init(.protocolProse, "never by its host alone", ["NodeTests/BanTests.invalidRecordBansIdentity", "NodeTests/BanTests.failedHandshakeBansEndpoint"]),
        .init(.protocolProse, "that identity is banned", ["NodeTests/BanTests.invalidRecordBansIdentity", "NodeTests/SessionKnobTests.banLastsBanSeconds"]),
        .init(.protocolProse, "the remote TCP endpoint, address and port, is banned", ["NodeTests/BanTests.failedHandshakeBansEndpoint", "NodeTests/BanListTests.endpointCap"]),
        .init(.protocolProse, "A node logs each ban in one line", ["NodeTests/BanTests.invalidRecordBansIdentity", "NodeTests/BanTests.failedHandshakeBansEndpoint"]),
    ]

    static let readme: [CoveredLimit] = [
        .init(.readmeTable, "connections at once", ["LocalAPITests/APILimitTests.connectionCap"]),
        .init(.readmeTable, "keep-alive connection silent", ["LocalAPITests/ConnectionTests.idleConnectionsAreClosedButStreamsAndBusyOnesAreNot"]),
        .init(.readmeTable, "request line", ["HTTPTests/LimitTests.defaultRequestLineIs8KiB", "LocalAPITests/MalformedRequestTests.oversizedHeaders"]),
        .init(.readmeTable, "header line", ["HTTPTests/LimitTests.defaultHeaderLineIs8KiB", "LocalAPITests/MalformedRequestTests.oversizedHeaders"]),
        .init(.readmeTable, "headers", ["HTTPTests/LimitTests.defaultTotalHeaderBytesIs32KiB", "HTTPTests/LimitTests.headerCount",
                                        "LocalAPITests/MalformedRequestTests.oversizedHeaders"]),
        .init(.readmeTable, "request body", ["HTTPTests/LimitTests.defaultBodyIs16MiB", "LocalAPITests/MalformedRequestTests.badContentLength"]),
        .init(.readmeTable, "one write (`PUT`, `PATCH`, `POST`)", ["LocalAPITests/APILimitTests.writeSize", "LocalAPITests/APILimitTests.pathsPerUpdate"]),
        .init(.readmeTable, "users returned (`/.lanchat/users?limit=N`)", ["LocalAPITests/APILimitTests.usersLimit"]),
        .init(.readmeTable, "a live write (typing, status, receipt: `PUT`/`PATCH`/`DELETE` at a live path)", ["LocalAPITests/LiveStateTests.liveWriteLimits"]),
        .init(.readmeTable, "file upload (`POST /v0/b/lanchat/o`)", ["LocalAPITests/APILimitTests.uploadSize", "StoreTests/FileStoreTests.refusals"]),
        .init(.readmeTable, "large reads open at once (a GET, or a stream's first `put`, of more than 256 values)",
              ["LocalAPITests/LargeReadTests.openReadsAreBounded", "StoreTests/TreeStreamTests.largeValueThreshold"]),
        .init(.readmeTable, "a client that takes nothing of a large read", ["LocalAPITests/LargeReadTests.stalledReadIsClosed"]),
        .init(.readmeProse, "within 6 s (three beacon intervals)", ["LocalAPITests/LiveStateTests.typingVanishes"]),
        .init(.readmeProse, "within 6 s of their last renewal", ["LocalAPITests/LiveStateTests.typingRelayedAlongALine",
                                                                   "SyncTests/LiveTableTests.relayed"]),
        .init(.readmeProse, "which your node sends every 2 s", ["LocalAPITests/LiveStateTests.typingRelayedAlongALine"]),
        .init(.readmeProse, "`away` after 5 minutes", ["LocalAPITests/LiveStateTests.presence"]),
        .init(.readmeProse, "4 MiB in flight per peer", ["NodeTests/SyncKnobTests.chunkWindowOfANode", "SyncTests/ChunkFetcherTests.spreadAndWindow"]),
        .init(.readmeProse, "unsent data: 4 MiB", ["LocalAPITests/StreamingTests.aSlowListenerIsClosedWithoutHurtingOthers"]),
        .init(.readmeProse, "strings of up to 10 MiB", ["LocalAPITests/APILimitTests.writeSize"]),
        .init(.readmeProse, "a body above 16 MiB (up to 256 MiB)", ["LocalAPITests/LargeWriteBodyTests.put40MiB", "LocalAPITests/LargeWriteBodyTests.limits",
                                                                    "HTTPTests/SpoolTests.spooled", "HTTPTests/SpoolTests.refused"]),
        .init(.readmeProse, "A string longer than 512 bytes", ["StoreTests/LongLeafTests.rowFollowsTheLeaf",
                                                              "StoreTests/LongLeafTests.neighboursOfALongString"]),
        .init(.readmeProse, "a body over 64 KiB, 413", ["LocalAPITests/GroupEndpointTests.oversizedBody"]),
        .init(.readmeProse, "64 KiB chunks", ["StoreTests/FileStoreTests.chunkBoundaries"]),
        .init(.readmeProse, "the drift bound (5 minutes)", ["StoreTests/DriftBoundTests.driftBoundToTheMillisecond", "CLITests/DoctorTests.clocks"]),
        .init(.readmeProse, "up to 512 connections at once", ["LocalAPITests/APILimitTests.connectionCap"]),
        .init(.readmeProse, "silent for 120 s", ["LocalAPITests/ConnectionTests.idleConnectionsAreClosedButStreamsAndBusyOnesAreNot"]),
        .init(.readmeProse, "256 KiB at a time", ["SyncTests/ChunkServingTests.servedInParts", "NodeTests/ChunkFloodTests.floodThrottled"]),
        .init(.readmeProse, "A new store's pages are 16 KiB", ["StoreTests/PageSizeTests.newStoresTakeLargerPages"]),
        .init(.readmeProse, "stores made before keep 4 KiB", ["StoreTests/PageSizeTests.olderStoresKeepTheirPages"]),
        .init(.readmeProse, "a checkpoint runs every 4 MiB of WAL", ["StoreTests/PageSizeTests.newStoresTakeLargerPages",
                                                                     "StoreTests/PageSizeTests.olderStoresKeepTheirPages"]),
    ]

    /// Quantities in the README's prose that are not limits of a node or its API.
    static let readmeNotLimits = [
        // A figure Tools/bigvalues-test.sh measures and checks, not a limit the node enforces.
        "within 64 MiB of where it was",
        "holds less than 48 MiB more than before while it is taken, 23 MiB measured; 36 MiB for a 248 MB PATCH",
        "and 10 MiB for a PUT of one 63 MB object",
        // A browser's limit, not lanchat's: why the web chat streams a conversation's live state once.
        "at most 6 connections to one address",
        "5 s in the test command",
        "A real 2 MiB tmpfs",
        // "Memory and storage at scale" says where memory goes, with its sizes.
        "about 72 bytes a record",
        "packed in 40 bytes",
        "the first 8 bytes of each id",
        "reads its stream in 1 MiB pieces",
    ]
}
