import Crypto
import Sync

/// The command line of the interop tool. Keys come as hex so the Python driver can pass the same
/// bytes to both implementations.
struct InteropOptions {
    var role: NoiseHandshake.Role
    var psk: [UInt8]
    var staticKey: [UInt8]
    var prologue: [UInt8] = []
    /// Our name in the transport messages ("ping from swift"), and the name we expect back.
    var name = "swift"
    var peer = "python"

    static let usage = """
        usage: NoiseInterop --role initiator|responder --psk HEX --static HEX [--prologue HEX]
                            [--name NAME] [--peer NAME]
        Runs Noise_XXpsk3_25519_ChaChaPoly_BLAKE2b over stdin/stdout (2-byte big-endian length
        frames): the handshake, then "ping from NAME" / "pong from NAME" transport messages.
        --static is a 32-byte X25519 private key. Prints the remote static key to stderr.
        """

    init(arguments: [String]) throws(InteropError) {
        var values: [String: String] = [:]
        var rest = arguments[...]
        while let flag = rest.popFirst() {
            guard flag.hasPrefix("--"), ["role", "psk", "static", "prologue", "name", "peer"].contains(String(flag.dropFirst(2))) else {
                throw .usage("unknown argument \(flag)")
            }
            guard let value = rest.popFirst() else { throw .usage("\(flag) needs a value") }
            values[String(flag.dropFirst(2))] = value
        }
        switch values["role"] {
        case "initiator": role = .initiator
        case "responder": role = .responder
        default: throw .usage("--role must be initiator or responder")
        }
        psk = try Self.hex(values["psk"], "psk", length: 32)
        staticKey = try Self.hex(values["static"], "static", length: 32)
        if let text = values["prologue"] { prologue = try Self.hex(text, "prologue", length: nil) }
        if let name = values["name"] { self.name = name }
        if let peer = values["peer"] { self.peer = peer }
    }

    private static func hex(_ text: String?, _ flag: String, length: Int?) throws(InteropError) -> [UInt8] {
        guard let text else { throw .usage("--\(flag) is required") }
        guard let bytes = Hex.decode(text) else { throw .usage("--\(flag) is not hex") }
        if let length, bytes.count != length { throw .usage("--\(flag) must be \(length) bytes, got \(bytes.count)") }
        return bytes
    }
}

/// Everything that ends a run, each with the message printed before exiting non-zero.
enum InteropError: Error, CustomStringConvertible {
    case usage(String)
    case peerClosed(during: String)
    case io(String)
    case noise(NoiseError, during: String)
    case unexpected(String)

    var description: String {
        switch self {
        case let .usage(text): return "\(text)\n\(InteropOptions.usage)"
        case let .peerClosed(during): return "peer closed the connection during \(during)"
        case let .io(text): return "I/O error: \(text)"
        case let .noise(error, during): return "\(error) during \(during)"
        case let .unexpected(text): return text
        }
    }
}
