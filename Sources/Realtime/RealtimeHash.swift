import Foundation
import Tree
import WebSocket

/// The hash the Firebase SDKs send with a transaction's write (`h`): the write applies only if
/// the value at the path still hashes the same, else the answer is `datastale` and the SDK runs
/// the transaction again on the value it is sent.
///
/// It is the SDKs' own definition, so both ends agree: nothing (null) hashes to the empty
/// string; a leaf to base64 SHA-1 of `number:` and the 16 hex digits of its IEEE 754 bits
/// (big-endian), `string:` and the text, or `boolean:` and `true`/`false`; an object to base64
/// SHA-1 of `:key:hash` for each child whose hash is not empty, children in priority order
/// (all priorities are null here, so key order). Priorities would prefix a `priority:` part;
/// nodes keep none.
public enum RealtimeHash {
    public static func of(_ value: JSONValue) -> String {
        switch value {
        case .null: return ""
        case let .bool(flag): return digest("boolean:" + (flag ? "true" : "false"))
        case let .string(text): return digest("string:" + text)
        case let .number(number):
            let bits = number.bitPattern
            let hex = String(bits, radix: 16)
            return digest("number:" + String(repeating: "0", count: 16 - hex.count) + hex)
        case let .array(items):
            var members: [String: JSONValue] = [:]
            for (i, item) in items.enumerated() where !item.isNull { members[String(i)] = item }
            return of(.object(members))
        case let .object(members):
            var text = ""
            for key in FirebaseOrder.sortedKeys(members.keys) {
                let child = of(members[key]!)
                if !child.isEmpty { text += ":" + key + ":" + child }
            }
            return text.isEmpty ? "" : digest(text)
        }
    }

    private static func digest(_ text: String) -> String {
        Data(SHA1.digest(Array(text.utf8))).base64EncodedString()
    }
}
