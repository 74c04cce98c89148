// swift-tools-version:6.0
// lanchat: a peer-to-peer chat node for local networks.
// Modules are layers; imports point down only (see README "Architecture").
import PackageDescription

let package = Package(
    name: "lanchat",
    platforms: [.macOS(.v13)],
    products: [
        .executable(name: "lanchat", targets: ["lanchat"]),
        .executable(name: "lanchat-bench", targets: ["LanchatBench"]),
        .executable(name: "lanchat-sim", targets: ["LanchatSim"]),
    ],
    targets: [
        // C libraries from the system (Debian: libsodium-dev, libsqlite3-dev).
        .systemLibrary(name: "CSodium", pkgConfig: "libsodium", providers: [.apt(["libsodium-dev"])]),
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        // SHA-1 (Debian: nettle-dev), which the websocket handshake and the Realtime Database
        // protocol's transaction hashes are defined with.
        .systemLibrary(name: "CNettle", pkgConfig: "nettle", providers: [.apt(["nettle-dev"])]),
        // The `lanchat` process's allocator (Debian: libjemalloc-dev), in place of the C library's
        // malloc. Why: a node decodes records on the verifier's threads and frees them on its
        // queue, and glibc's malloc handles memory freed on another thread than the one that took
        // it slowly (every allocation on the verifier's threads took the slow path, every free on
        // the queue took an arena lock), a tenth of what a cold sync spends beside signatures.
        // Only the executable links it; a process embedding a node keeps its own allocator.
        .systemLibrary(name: "CJemalloc", pkgConfig: "jemalloc", providers: [.apt(["libjemalloc-dev"])]),

        // BLAKE2b of 8 (AVX-512) or 4 (AVX2) equal-length messages at once, for chunk checks. Optimised
        // in debug builds too, as the tests and acceptance scripts hash many chunks.
        .target(name: "CBLAKE2bLanes", cSettings: [.unsafeFlags(["-O2"])]),
        .target(name: "CMemory"),

        // Pure layers: no Dispatch, no SQL, no sockets.
        .target(name: "Crypto", dependencies: ["CSodium", "CBLAKE2bLanes"]),
        .target(name: "Tree", dependencies: ["Crypto"]),
        .target(name: "Wire", dependencies: ["Tree", "Crypto"]),
        .target(name: "Sync", dependencies: ["Wire", "Tree", "Crypto"]),
        // Private conversations: key schedule, sealing and membership, pure like the layers above.
        .target(name: "Private", dependencies: ["Wire", "Tree", "Crypto"]),

        // IO layers.
        .target(name: "SQLite", dependencies: ["CSQLite"]),
        .target(name: "Store", dependencies: ["SQLite", "Private", "Wire", "Tree", "Crypto"]),
        .target(name: "Transport"),

        // The composition root: a running node.
        .target(name: "Node", dependencies: ["Store", "Private", "Sync", "Transport", "Wire", "Tree", "Crypto", "CMemory"]),

        // HTTP/1.1 parsing (sans-IO) and the local API served by a node.
        .target(name: "HTTP"),
        // The websocket protocol (RFC 6455, sans-IO) and, over it, the Firebase Realtime Database
        // protocol's pure parts (framing, messages, queries, hashes, credentials).
        .target(name: "WebSocket", dependencies: ["HTTP", "CNettle"]),
        .target(name: "Realtime", dependencies: ["WebSocket", "Tree", "Crypto"]),
        // The web chat's page, styles and script (Sources/LocalAPI/Web) are compiled into the binary.
        .target(name: "LocalAPI", dependencies: ["HTTP", "WebSocket", "Realtime", "Node", "Store", "Private", "Transport", "Wire", "Tree", "Crypto"],
                resources: [.embedInCode("Web/index.html"), .embedInCode("Web/app.css"), .embedInCode("Web/app.js")]),

        // Commands and the executables (whose mains are one line).
        .target(name: "CLI", dependencies: ["LocalAPI", "Node", "Store", "Private", "Sync", "Transport", "Wire", "Tree", "Crypto"]),
        .executableTarget(name: "lanchat", dependencies: ["CLI", "CJemalloc"]),
        .executableTarget(name: "NoiseInterop", dependencies: ["Sync", "Crypto"]),
        // Seeded randomness and Protocol.md's vectors, for tests and benchmarks only.
        .target(name: "TestSupport"),
        // A disk that fails on purpose (full, I/O errors, failed syncs, torn writes, power cuts):
        // an SQLite VFS in C and the chunk pack's system calls, for tests only.
        .target(name: "CFaultDisk", dependencies: ["CSQLite"]),
        .target(name: "DiskFaults", dependencies: ["CFaultDisk", "Store", "SQLite"]),
        .target(name: "Bench", dependencies: ["TestSupport", "LocalAPI", "Node", "Sync", "Transport", "Store", "Private", "Wire", "Tree", "Crypto", "SQLite", "CMemory"]),
        .executableTarget(name: "LanchatBench", dependencies: ["Bench"]),
        // The real Node on a simulated clock, network and disk, driven from a seed (Tools/sim).
        .target(name: "Simulation", dependencies: ["TestSupport", "Node", "Store", "SQLite", "Sync", "Transport", "Wire", "Tree", "Crypto"]),
        .executableTarget(name: "LanchatSim", dependencies: ["Simulation"]),
        // The invariants of the fuzz targets (Tools/fuzz), shared with their replay in `swift test`.
        .target(name: "FuzzChecks", dependencies: ["Wire", "Sync", "Tree", "HTTP", "WebSocket", "Realtime", "Crypto"]),

        .testTarget(name: "CryptoTests", dependencies: ["TestSupport", "Crypto"]),
        .testTarget(name: "TreeTests", dependencies: ["TestSupport", "Tree"]),
        .testTarget(name: "WireTests", dependencies: ["TestSupport", "Wire", "Tree", "Crypto"]),
        .testTarget(name: "PrivateTests", dependencies: ["TestSupport", "Private", "Wire", "Tree", "Crypto"]),
        .testTarget(name: "SQLiteTests", dependencies: ["TestSupport", "SQLite"]),
        .testTarget(name: "SyncTests", dependencies: ["TestSupport", "Sync", "Wire", "Tree", "Crypto"]),
        .testTarget(name: "TransportTests", dependencies: ["TestSupport", "Transport"]),
        .testTarget(name: "HTTPTests", dependencies: ["TestSupport", "HTTP"]),
        .testTarget(name: "WebSocketTests", dependencies: ["TestSupport", "WebSocket", "HTTP"]),
        .testTarget(name: "RealtimeTests", dependencies: ["TestSupport", "Realtime", "WebSocket", "Tree"]),
        .testTarget(name: "LocalAPITests", dependencies: ["TestSupport", "DiskFaults", "LocalAPI", "WebSocket", "Realtime", "Node", "HTTP", "Store", "Transport", "Tree", "Crypto", "Sync", "Wire", "Private"]),
        .testTarget(name: "StoreTests", dependencies: ["TestSupport", "Store", "Private", "Wire", "Tree", "Crypto", "SQLite", "CMemory"],
                    exclude: ["Fixtures"]),
        .testTarget(name: "DiskFaultTests", dependencies: ["TestSupport", "DiskFaults", "Store", "Wire", "Tree", "Crypto", "SQLite"]),
        .testTarget(name: "CLITests", dependencies: ["TestSupport", "CLI"]),
        .testTarget(name: "FuzzReplayTests", dependencies: ["FuzzChecks"]),
        .testTarget(name: "SimulationTests", dependencies: ["Simulation"]),
        .testTarget(name: "NodeTests", dependencies: ["TestSupport", "DiskFaults", "Node", "Private", "Store", "Sync", "Transport", "Wire", "Tree", "Crypto"]),
    ],
    swiftLanguageModes: [.v6]
)
