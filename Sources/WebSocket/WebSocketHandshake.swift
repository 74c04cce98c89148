import Foundation
import HTTP

/// The opening handshake, server side (RFC 6455 §4.2): which requests ask for a websocket,
/// and the answer to one.
public enum WebSocketHandshake {
    /// The GUID the accept key is derived with (RFC 6455 §1.3).
    static let guid = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

    /// `Sec-WebSocket-Accept` for a client's `Sec-WebSocket-Key`: base64 of SHA-1 of the key
    /// followed by the GUID.
    public static func accept(key: String) -> String {
        Data(SHA1.digest(Array((key + guid).utf8))).base64EncodedString()
    }

    /// Whether `request` asks to switch to a websocket (`Upgrade: websocket`).
    public static func isUpgrade(_ request: HTTPRequest) -> Bool {
        request.headerTokens("upgrade").contains { $0.lowercased() == "websocket" }
    }

    /// The answer to an upgrade request.
    public enum Answer {
        /// `101 Switching Protocols`: the connection is a websocket once it is written.
        case accepted(HTTPResponse)
        /// The error to send instead (the connection then closes).
        case refused(HTTPResponse)
    }

    /// `101 Switching Protocols` when `request` is a valid version 13 handshake (a GET over
    /// HTTP/1.1 with `Connection: Upgrade` and a key that is 16 bytes in base64), else 426 naming
    /// the version this server speaks when only the version is wrong, 400 otherwise.
    public static func response(to request: HTTPRequest) -> Answer {
        func refuse(_ status: Int, _ reason: String, _ extra: [(name: String, value: String)] = []) -> Answer {
            .refused(HTTPResponse(status: status, headers: extra + [("Content-Type", "text/plain; charset=utf-8")],
                                  body: Array((reason + "\n").utf8)))
        }
        guard request.method == "GET" else { return refuse(400, "A websocket handshake is a GET") }
        guard request.version == .http1_1 else { return refuse(400, "A websocket handshake needs HTTP/1.1") }
        guard request.headerTokens("connection").contains(where: { $0.lowercased() == "upgrade" }) else {
            return refuse(400, "A websocket handshake needs Connection: Upgrade")
        }
        guard request.headerValues("sec-websocket-version").map({ $0.trimmingCharacters(in: .whitespaces) }) == ["13"] else {
            return refuse(426, "Only websocket version 13 is spoken here", [("Sec-WebSocket-Version", "13")])
        }
        guard let key = request.header("sec-websocket-key")?.trimmingCharacters(in: .whitespaces),
              let decoded = Data(base64Encoded: key), decoded.count == 16 else {
            return refuse(400, "A websocket handshake needs a Sec-WebSocket-Key of 16 bytes in base64")
        }
        return .accepted(HTTPResponse(status: 101, headers: [
            ("Upgrade", "websocket"),
            ("Connection", "Upgrade"),
            ("Sec-WebSocket-Accept", accept(key: key)),
        ]))
    }
}
