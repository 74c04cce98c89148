import Glibc
import Testing
@testable import Transport

@Suite struct SyscallTests {
    @Test func errnoBecomesTypedErrorNamingTheCall() {
        #expect(throws: SocketError.system(call: "close-test", errno: EBADF)) {
            try syscall("close-test") { fcntl(-1, F_GETFL) }
        }
    }

    @Test func emptyNonBlockingReadIsWouldBlock() throws {
        let fd = try SocketCalls.open(family: AF_INET, type: SOCK_DGRAM)
        defer { closeDescriptor(fd) }
        var byte: UInt8 = 0
        #expect(throws: SocketError.wouldBlock(call: "recv")) {
            try syscall("recv") { recv(fd, &byte, 1, 0) }
        }
    }

    @Test func successReturnsTheResult() throws {
        #expect(try syscall("getpid") { getpid() } == getpid())
    }

    @Test func descriptionsNameCallAndReason() {
        let refused = SocketError.system(call: "connect", errno: ECONNREFUSED)
        #expect(refused.description.hasPrefix("connect: "))
        #expect(refused.description.contains("\(ECONNREFUSED)"))
        #expect(refused.errnoCode == ECONNREFUSED)
        #expect(SocketError.timedOut.errnoCode == nil)
    }
}
