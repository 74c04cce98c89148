import Crypto
import Foundation
import Tree

/// Which credentials of an `auth` or `gauth` request open a session: the node's API token,
/// sent as it is (what an SDK sends for `connectDatabaseEmulator(..., {mockUserToken: TOKEN})`
/// with a string, or for the `owner` token of an emulator connection when the node's token is
/// `owner`), or inside the unsigned token an SDK makes of a `mockUserToken` object
/// (`base64url(header).base64url(claims).` with `"alg": "none"`), as its `sub` or `user_id`.
/// The unsigned token is no proof of anything but that the page knows the node's token, which
/// is exactly what the REST API asks of its clients too.
public enum RealtimeCredential {
    /// Longest credential looked at; an SDK's tokens are a few hundred bytes.
    public static let maxBytes = 16 * 1024

    public static func accepts(_ credential: String, token: String) -> Bool {
        guard !token.isEmpty, credential.utf8.count <= maxBytes else { return false }
        if constantTimeEqual(Array(credential.utf8), Array(token.utf8)) { return true }
        let parts = credential.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[2].isEmpty,
              case let .object(header)? = decode(parts[0]), header["alg"] == .string("none"),
              case let .object(claims)? = decode(parts[1]) else { return false }
        for name in ["sub", "user_id"] {
            if case let .string(subject)? = claims[name], constantTimeEqual(Array(subject.utf8), Array(token.utf8)) { return true }
        }
        return false
    }

    /// A JWT part: base64url (padding tolerated) of a JSON object.
    private static func decode(_ part: Substring) -> JSONValue? {
        var text = part.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        text = text.trimmingCharacters(in: CharacterSet(charactersIn: "="))
        text += String(repeating: "=", count: (4 - text.count % 4) % 4)
        guard let data = Data(base64Encoded: text) else { return nil }
        return try? JSONValue.parse(Array(data), limits: JSONLimits(maxBytes: maxBytes, maxDepth: 8, maxStringBytes: maxBytes))
    }
}
