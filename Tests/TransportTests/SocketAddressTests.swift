import Glibc
import Testing
@testable import Transport

@Suite struct SocketAddressTests {
    @Test func parsesIPv4AndPrintsItBack() throws {
        let address = try SocketAddress.parse("192.168.1.20:7000")
        #expect(address.family == .ipv4)
        #expect(address.host == "192.168.1.20")
        #expect(address.port == 7000)
        #expect(address.description == "192.168.1.20:7000")
    }

    @Test func parsesBracketedIPv6() throws {
        let address = try SocketAddress.parse("[::1]:5")
        #expect(address.family == .ipv6)
        #expect(address.host == "::1")
        #expect(address.description == "[::1]:5")
    }

    @Test func localhostMeansIPv4Loopback() throws {
        #expect(try SocketAddress(host: "localhost", port: 9) == SocketAddress(host: "127.0.0.1", port: 9))
        #expect(try SocketAddress.parse("localhost:80").description == "127.0.0.1:80")
    }

    @Test(arguments: [
        "", "1.2.3.4", "1.2.3.4:", "1.2.3.4:65536", "1.2.3.4:-1", "::1:80", "[::1]", "[::1]80",
        "example.com:80", "1.2.3:80", "[1.2.3.4:5", "[fe80::1%no-such-interface]:1", "1.2.3.4%1:5",
    ])
    func rejectsMalformedText(_ text: String) {
        #expect(throws: SocketError.self) { try SocketAddress.parse(text) }
    }

    @Test func roundTripsThroughSockaddrStorage() throws {
        for text in ["10.0.0.1:1", "255.255.255.255:65535", "[fe80::1:2]:443", "[fe80::1%3]:80", "[2001:db8::ff]:0"] {
            let address = try SocketAddress.parse(text)
            let back = try SocketAddress(storage: address.sockaddrStorage)
            #expect(back == address)
            #expect(back.hashValue == address.hashValue)
            #expect(back.description == text)
        }
    }

    @Test func storageHasNetworkByteOrder() throws {
        var storage = try SocketAddress.parse("1.2.3.4:258").sockaddrStorage
        let raw = withUnsafeBytes(of: &storage) { $0.load(as: sockaddr_in.self) }
        #expect(Int32(raw.sin_family) == AF_INET)
        withUnsafeBytes(of: raw.sin_port) { #expect(Array($0) == [1, 2]) }
        withUnsafeBytes(of: raw.sin_addr) { #expect(Array($0) == [1, 2, 3, 4]) }
    }

    @Test func unknownFamilyIsRejected() {
        #expect(throws: SocketError.self) { try SocketAddress(storage: sockaddr_storage()) }
    }

    @Test func recognisesMulticast() throws {
        #expect(try SocketAddress.parse("239.1.2.3:1").isMulticast)
        #expect(try SocketAddress.parse("224.0.0.1:1").isMulticast)
        #expect(try !SocketAddress.parse("127.0.0.1:1").isMulticast)
        #expect(try SocketAddress.parse("[ff02::1]:1").isMulticast)
        #expect(try !SocketAddress.parse("[::1]:1").isMulticast)
    }
}
