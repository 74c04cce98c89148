import Testing
@testable import Node

/// The node gives back what a burst freed (`Node.releaseFreedMemoryWhenQuiet`): that must really
/// reach malloc, and did not while the C file's glibc test compiled the empty fallback.
@Suite("Freed memory handed back")
struct MemoryReleaseTests {
    @Test("memory freed after many small allocations is handed back to the system on Linux")
    func freedMemoryIsReleased() {
        var blocks: [[UInt8]] = (0..<20_000).map { [UInt8](repeating: UInt8($0 & 0xFF), count: 4000) }
        #expect(blocks.count == 20_000)
        blocks.removeAll()
        #if os(Linux)
        #expect(Node.releaseFreedMemory(), "malloc_trim released nothing (or is not called)")
        #endif
    }

    @Test("malloc's arenas are capped at one per core on Linux, as a node starts")
    func arenasCapped() throws {
        #if os(Linux)
        #expect(Node.mallocArenasLimited, "mallopt(M_ARENA_MAX) did not take (or is not called)")
        #endif
    }
}
