import Foundation
import Node

/// How `lanchat run` writes its log lines.
enum LogFormat: String {
    /// `TIME LEVEL message` for people; the level coloured on a terminal only.
    case text
    /// One JSON object per line: `{"time":...,"level":...,"message":...}`, plus `"fields"` when
    /// the event has any.
    case json
}

/// Writes log lines to standard error, one line per event, whole lines in one write.
///
/// In text form under systemd (standard error is the journal, as `$JOURNAL_STREAM` says) each
/// line starts with the syslog level prefix (`<6>`, `<4>`, `<3>`) in place of the time, which the
/// journal adds itself; on a terminal the level is coloured (unless `$NO_COLOR` is set), and
/// anywhere else the line has no escape codes.
struct LogWriter: Sendable {
    let format: LogFormat
    let colour: Bool
    let journal: Bool
    let write: @Sendable (String) -> Void

    init(format: LogFormat, colour: Bool, journal: Bool, write: @escaping @Sendable (String) -> Void) {
        self.format = format
        self.colour = colour
        self.journal = journal
        self.write = write
    }

    /// The writer for this process's standard error.
    static func standardError(format: LogFormat, environment: [String: String]) -> LogWriter {
        let terminal = isatty(2) == 1
        let colour = terminal && environment["NO_COLOR"] == nil && environment["TERM"] != "dumb"
        return LogWriter(format: format, colour: colour, journal: isJournal(environment["JOURNAL_STREAM"])) { line in
            let bytes = Array(line.utf8)
            var offset = 0
            while offset < bytes.count {
                let n = bytes.withUnsafeBufferPointer { Glibc.write(2, $0.baseAddress! + offset, $0.count - offset) }
                if n < 0 { if errno == EINTR { continue }; return }
                offset += n
            }
        }
    }

    /// Whether standard error is the stream that `$JOURNAL_STREAM` ("DEVICE:INODE") names.
    static func isJournal(_ stream: String?) -> Bool {
        guard let parts = stream?.split(separator: ":"), parts.count == 2,
              let device = UInt64(parts[0]), let inode = UInt64(parts[1]) else { return false }
        var info = stat()
        guard fstat(2, &info) == 0 else { return false }
        return UInt64(info.st_dev) == device && UInt64(info.st_ino) == inode
    }

    func log(_ level: LogLevel, _ message: String, fields: [(String, String)] = [], now: Date = Date()) {
        write(render(level, message, fields: fields, now: now))
    }

    /// One event as one line, newline included. Newlines inside the message are escaped, so an
    /// event never spans lines.
    func render(_ level: LogLevel, _ message: String, fields: [(String, String)] = [], now: Date) -> String {
        switch format {
        case .json:
            var line = "{\"time\":\(Self.quoted(Self.timestamp(now))),\"level\":\"\(level.rawValue)\",\"message\":\(Self.quoted(message))"
            if !fields.isEmpty {
                line += ",\"fields\":{" + fields.map { "\(Self.quoted($0.0)):\(Self.quoted($0.1))" }.joined(separator: ",") + "}"
            }
            return line + "}\n"
        case .text:
            let flat = message.replacingOccurrences(of: "\n", with: "\\n")
            if journal { return "<\(Self.syslogPriority(level))>\(flat)\n" }
            let word = level.rawValue.padding(toLength: 7, withPad: " ", startingAt: 0)
            let shown = colour ? Self.colourCode(level) + word + "\u{1B}[0m" : word
            return "\(Self.timestamp(now)) \(shown) \(flat)\n"
        }
    }

    static func syslogPriority(_ level: LogLevel) -> Int {
        switch level {
        case .info: return 6
        case .warning: return 4
        case .error: return 3
        }
    }

    static func colourCode(_ level: LogLevel) -> String {
        switch level {
        case .info: return "\u{1B}[32m"
        case .warning: return "\u{1B}[33m"
        case .error: return "\u{1B}[31m"
        }
    }

    /// RFC 3339 in UTC with milliseconds: `2026-12-01T21:16:26.123Z`.
    static func timestamp(_ date: Date) -> String {
        let millis = Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
        var seconds = time_t(millis / 1000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        return String(format: "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1,
                      Int(parts.tm_mday), Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec), Int(millis % 1000))
    }

    /// A JSON string literal.
    static func quoted(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                out += String(format: "\\u%04x", scalar.value)
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}
