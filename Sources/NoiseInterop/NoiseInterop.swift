#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Crypto
import Sync

/// Runs one Noise session against another implementation (Tools/interop/noise_interop.py drives
/// it with Python's `noiseprotocol`), so the handshake is checked against an independent
/// implementation in both roles, not only against itself.
@main
enum NoiseInterop {
    static func main() {
        // A peer that hangs up must not kill us with SIGPIPE before we can report it.
        signal(SIGPIPE, SIG_IGN)
        do {
            let options = try InteropOptions(arguments: Array(CommandLine.arguments.dropFirst()))
            try run(options)
            printError("NoiseInterop: ok")
            exit(0)
        } catch {
            printError("NoiseInterop: error: \(error)")
            exit(error.isUsage ? 2 : 1)
        }
    }

    static func run(_ options: InteropOptions) throws(InteropError) {
        let localStatic: X25519PrivateKey
        do { localStatic = try X25519PrivateKey(bytes: options.staticKey) } catch { throw .usage("--static: \(error)") }
        var handshake: NoiseHandshake
        do {
            handshake = try NoiseHandshake(role: options.role, localStatic: localStatic, psk: options.psk, prologue: options.prologue)
        } catch {
            throw .noise(error, during: "setup")
        }

        // Three handshake messages; the initiator writes the first and the last.
        let greeting = Array("hello from \(options.name)".utf8)
        let expectedGreeting = "hello from \(options.peer)"
        for index in 1...3 {
            let step = "handshake message \(index)"
            let writing = (index % 2 == 1) == (options.role == .initiator)
            do {
                if writing {
                    try FrameIO.writeFrame(try handshake.writeMessage(payload: index == 1 ? [] : greeting))
                } else {
                    let payload = try handshake.readMessage(FrameIO.readFrame(during: step))
                    let expected = index == 1 ? "" : expectedGreeting
                    guard payload == Array(expected.utf8) else {
                        throw InteropError.unexpected("\(step): payload \"\(String(decoding: payload, as: UTF8.self))\", expected \"\(expected)\"")
                    }
                }
            } catch let error as NoiseError {
                throw .noise(error, during: step)
            } catch let error as InteropError {
                throw error
            } catch {
                throw .unexpected("\(error)")
            }
        }
        var transport: NoiseTransport
        do { transport = try handshake.split() } catch { throw .noise(error, during: "split") }

        // Initiator pings, responder checks and pongs, initiator checks.
        let outgoing = (options.role == .initiator ? "ping" : "pong") + " from \(options.name)"
        let incoming = (options.role == .initiator ? "pong" : "ping") + " from \(options.peer)"
        if options.role == .initiator { try send(outgoing, &transport) }
        let received = try receive(&transport)
        guard received == incoming else { throw .unexpected("transport: got \"\(received)\", expected \"\(incoming)\"") }
        if options.role == .responder { try send(outgoing, &transport) }
        // Reported only now: in XXpsk3 the initiator learns that the peer holds the network key
        // from the first transport message it can decrypt, not from the handshake itself.
        printError("remote static: \(Hex.encode(transport.remoteStatic.bytes))")
    }

    private static func send(_ text: String, _ transport: inout NoiseTransport) throws(InteropError) {
        do { try FrameIO.writeFrame(try transport.encrypt(Array(text.utf8))) } catch let error as NoiseError {
            throw .noise(error, during: "transport send")
        } catch let error as InteropError {
            throw error
        } catch {
            throw .unexpected("\(error)")
        }
    }

    private static func receive(_ transport: inout NoiseTransport) throws(InteropError) -> String {
        let frame = try FrameIO.readFrame(during: "transport receive")
        do {
            return String(decoding: try transport.decrypt(frame), as: UTF8.self)
        } catch {
            throw .noise(error, during: "transport receive")
        }
    }
}

extension Error {
    fileprivate var isUsage: Bool {
        if case .usage? = self as? InteropError { return true }
        return false
    }
}
