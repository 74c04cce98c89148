/// One step of a JSON document read as a stream (`JSONStreamReader`).
public enum JSONStreamEvent: Equatable, Sendable {
    case objectStart
    /// An object member's key, exactly as decoded; its value's events follow.
    case key(String)
    case objectEnd
    case arrayStart
    case arrayEnd
    /// null, a boolean, a number or a string.
    case scalar(JSONValue)
}

/// A strict RFC 8259 reader that takes its input a piece at a time and hands out the document
/// as events, so that a document of hundreds of megabytes (a REST write's body, read from its
/// spool file) is never held whole: memory is one piece, the string or number being read and
/// the stack of open containers.
///
/// It accepts and refuses exactly what `JSONValue.parse` does, with the same errors (offsets
/// count from the document's start), but for duplicate keys, which it cannot see without
/// keeping every key of an object: the consumer checks those. A number's text is bounded by
/// `maxStringBytes` like a string (the whole-document parser bounds it by the document).
public struct JSONStreamReader {
    private enum Container { case object, array }
    private enum State {
        /// The document's value is next.
        case start
        /// A value is next (after a key's colon or an array's comma).
        case value
        /// After `{`: a key or `}`.
        case firstKey
        /// After a comma in an object: a key.
        case key
        /// After `[`: a value or `]`.
        case firstItem
        /// After a value: a comma, the end of the container, or the end of the document.
        case afterValue
        case done
    }

    private let limits: JSONLimits
    private let source: () throws -> ArraySlice<UInt8>?
    private var buffer: [UInt8] = []
    private var index = 0
    /// Bytes of the document before `buffer[0]`.
    private var consumed = 0
    private var exhausted = false
    private var stack: [Container] = []
    private var state = State.start

    /// A reader of the document whose bytes `source` returns in order (nil at its end). An
    /// error `source` throws is passed on as it is.
    public init(limits: JSONLimits = .default, source: @escaping () throws -> ArraySlice<UInt8>?) {
        self.limits = limits
        self.source = source
    }

    /// Nesting of the containers open now.
    public var depth: Int { stack.count }

    /// The next event, or nil once the document has ended (then the input was checked to hold
    /// only whitespace after it).
    public mutating func next() throws -> JSONStreamEvent? {
        while true {
            switch state {
            case .done:
                return nil
            case .start, .value:
                try skipWhitespace()
                return try value()
            case .firstKey, .key:
                try skipWhitespace()
                if state == .firstKey, try peek() == UInt8(ascii: "}") {
                    index += 1
                    return close()
                }
                guard let byte = try peek() else { throw JSONError.unexpectedEnd(offset: offset, expected: "a string key") }
                guard byte == UInt8(ascii: "\"") else { throw JSONError.unexpectedByte(offset: offset, expected: "a string key") }
                let key = try string()
                try skipWhitespace()
                try expect(UInt8(ascii: ":"), "':'")
                state = .value
                return .key(key)
            case .firstItem:
                try skipWhitespace()
                if try peek() == UInt8(ascii: "]") {
                    index += 1
                    return close()
                }
                return try value()
            case .afterValue:
                try skipWhitespace()
                guard let top = stack.last else {
                    guard try peek() == nil else { throw JSONError.trailingData(offset: offset) }
                    state = .done
                    return nil
                }
                let end = top == .object ? UInt8(ascii: "}") : UInt8(ascii: "]")
                let expected = top == .object ? "',' or '}'" : "',' or ']'"
                guard let byte = try peek() else { throw JSONError.unexpectedEnd(offset: offset, expected: expected) }
                index += 1
                if byte == end { return close() }
                guard byte == UInt8(ascii: ",") else {
                    index -= 1
                    throw JSONError.unexpectedByte(offset: offset, expected: expected)
                }
                state = top == .object ? .key : .value
            }
        }
    }

    /// Reads every remaining event, checking the rest of the document.
    public mutating func skipToEnd() throws {
        while try next() != nil {}
    }

    // MARK: - Values

    private var offset: Int { consumed + index }

    private mutating func close() -> JSONStreamEvent {
        let top = stack.removeLast()
        state = .afterValue
        return top == .object ? .objectEnd : .arrayEnd
    }

    private mutating func value() throws -> JSONStreamEvent {
        guard let byte = try peek() else { throw JSONError.unexpectedEnd(offset: offset, expected: "a value") }
        switch byte {
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            guard stack.count < limits.maxDepth else { throw JSONError.tooDeep(offset: offset, limit: limits.maxDepth) }
            index += 1
            let isObject = byte == UInt8(ascii: "{")
            stack.append(isObject ? .object : .array)
            state = isObject ? .firstKey : .firstItem
            return isObject ? .objectStart : .arrayStart
        case UInt8(ascii: "\""):
            let text = try string()
            state = .afterValue
            return .scalar(.string(text))
        case UInt8(ascii: "t"):
            try literal("true")
            state = .afterValue
            return .scalar(.bool(true))
        case UInt8(ascii: "f"):
            try literal("false")
            state = .afterValue
            return .scalar(.bool(false))
        case UInt8(ascii: "n"):
            try literal("null")
            state = .afterValue
            return .scalar(.null)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            let number = try self.number()
            state = .afterValue
            return .scalar(.number(number))
        default:
            throw JSONError.unexpectedByte(offset: offset, expected: "a value")
        }
    }

    // MARK: - Input

    /// Makes at least one byte available past `index` unless the input has ended.
    private mutating func fill() throws -> Bool {
        if index < buffer.count { return true }
        while !exhausted {
            guard let piece = try source() else {
                exhausted = true
                break
            }
            consumed += buffer.count
            buffer = Array(piece)
            index = 0
            guard consumed + buffer.count <= limits.maxBytes else {
                throw JSONError.inputTooLarge(byteCount: consumed + buffer.count, limit: limits.maxBytes)
            }
            if !buffer.isEmpty { return true }
        }
        return false
    }

    private mutating func peek() throws -> UInt8? {
        try fill() ? buffer[index] : nil
    }

    private mutating func skipWhitespace() throws {
        while try fill() {
            switch buffer[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    private mutating func expect(_ byte: UInt8, _ expected: String) throws {
        guard let found = try peek() else { throw JSONError.unexpectedEnd(offset: offset, expected: expected) }
        guard found == byte else { throw JSONError.unexpectedByte(offset: offset, expected: expected) }
        index += 1
    }

    private mutating func literal(_ word: String) throws {
        for byte in word.utf8 { try expect(byte, "'\(word)'") }
    }

    // MARK: - Numbers

    private static func isDigit(_ byte: UInt8?) -> Bool { byte.map { $0 >= 0x30 && $0 <= 0x39 } ?? false }

    private mutating func number() throws -> Double {
        let start = offset
        var text: [UInt8] = []
        func take(_ reader: inout JSONStreamReader, _ text: inout [UInt8]) throws {
            text.append(reader.buffer[reader.index])
            reader.index += 1
            guard text.count <= reader.limits.maxStringBytes else { throw JSONError.numberOutOfRange(offset: start) }
        }
        if try peek() == UInt8(ascii: "-") { try take(&self, &text) }
        guard let first = try peek() else { throw JSONError.unexpectedEnd(offset: offset, expected: "a digit") }
        if first == UInt8(ascii: "0") {
            try take(&self, &text)
            if Self.isDigit(try peek()) { throw JSONError.leadingZero(offset: start) }
        } else if Self.isDigit(first) {
            while Self.isDigit(try peek()) { try take(&self, &text) }
        } else {
            throw JSONError.unexpectedByte(offset: offset, expected: "a digit")
        }
        if try peek() == UInt8(ascii: ".") {
            try take(&self, &text)
            try digits(&text, take)
        }
        if let e = try peek(), e == UInt8(ascii: "e") || e == UInt8(ascii: "E") {
            try take(&self, &text)
            if let sign = try peek(), sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") { try take(&self, &text) }
            try digits(&text, take)
        }
        guard let value = Double(String(decoding: text, as: UTF8.self)), value.isFinite else {
            throw JSONError.numberOutOfRange(offset: start)
        }
        return value
    }

    private mutating func digits(_ text: inout [UInt8], _ take: (inout JSONStreamReader, inout [UInt8]) throws -> Void) throws {
        guard let byte = try peek() else { throw JSONError.unexpectedEnd(offset: offset, expected: "a digit") }
        guard Self.isDigit(byte) else { throw JSONError.unexpectedByte(offset: offset, expected: "a digit") }
        while Self.isDigit(try peek()) { try take(&self, &text) }
    }

    // MARK: - Strings

    private mutating func string() throws -> String {
        let start = offset
        index += 1  // the opening quote
        var out: [UInt8] = []
        while true {
            guard try fill() else { throw JSONError.unexpectedEnd(offset: offset, expected: "'\"'") }
            // A run of plain ASCII in one go.
            var runEnd = index
            while runEnd < buffer.count {
                let byte = buffer[runEnd]
                if byte < 0x20 || byte >= 0x80 || byte == 0x22 || byte == 0x5C { break }
                runEnd += 1
            }
            if runEnd > index {
                out.append(contentsOf: buffer[index..<runEnd])
                index = runEnd
                guard out.count <= limits.maxStringBytes else { throw JSONError.stringTooLong(offset: start, limit: limits.maxStringBytes) }
                continue
            }
            let byte = buffer[index]
            switch byte {
            case 0x22:
                index += 1
                return String(decoding: out, as: UTF8.self)
            case 0x5C:
                try escape(into: &out)
            case 0..<0x20:
                throw JSONError.controlCharacterInString(offset: offset)
            default:
                try multiByte(into: &out)
            }
            guard out.count <= limits.maxStringBytes else { throw JSONError.stringTooLong(offset: start, limit: limits.maxStringBytes) }
        }
    }

    /// One multi-byte UTF-8 sequence, checked as `JSONValue.parse` checks it.
    private mutating func multiByte(into out: inout [UInt8]) throws {
        let start = offset
        let lead = buffer[index]
        guard let (length, low, high) = JSONParser.utf8Sequence(lead: lead) else { throw JSONError.invalidUTF8(offset: start) }
        out.append(lead)
        index += 1
        for position in 1..<length {
            guard let byte = try peek() else { throw JSONError.invalidUTF8(offset: start) }
            let range: ClosedRange<UInt8> = position == 1 ? low...high : 0x80...0xBF
            guard range.contains(byte) else { throw JSONError.invalidUTF8(offset: start) }
            out.append(byte)
            index += 1
        }
    }

    private mutating func escape(into out: inout [UInt8]) throws {
        let start = offset  // the backslash
        index += 1
        guard let escaped = try peek() else { throw JSONError.unexpectedEnd(offset: offset, expected: "an escape character") }
        index += 1
        switch escaped {
        case 0x22, 0x5C, 0x2F: out.append(escaped)
        case UInt8(ascii: "b"): out.append(0x08)
        case UInt8(ascii: "f"): out.append(0x0C)
        case UInt8(ascii: "n"): out.append(0x0A)
        case UInt8(ascii: "r"): out.append(0x0D)
        case UInt8(ascii: "t"): out.append(0x09)
        case UInt8(ascii: "u"):
            let unit = try hex4()
            switch unit {
            case 0xD800...0xDBFF:
                guard try peek() == 0x5C else { throw JSONError.loneSurrogate(offset: start) }
                index += 1
                guard try peek() == UInt8(ascii: "u") else { throw JSONError.loneSurrogate(offset: start) }
                index += 1
                let trail = try hex4()
                guard (0xDC00...0xDFFF).contains(trail) else { throw JSONError.loneSurrogate(offset: start) }
                JSONParser.appendUTF8(0x10000 + ((unit - 0xD800) << 10) + (trail - 0xDC00), to: &out)
            case 0xDC00...0xDFFF:
                throw JSONError.loneSurrogate(offset: start)
            default:
                JSONParser.appendUTF8(unit, to: &out)
            }
        default:
            throw JSONError.invalidEscape(offset: start)
        }
    }

    private mutating func hex4() throws -> UInt32 {
        var value: UInt32 = 0
        for _ in 0..<4 {
            guard let byte = try peek() else { throw JSONError.unexpectedEnd(offset: offset, expected: "a hex digit") }
            let digit: UInt8
            switch byte {
            case 0x30...0x39: digit = byte - 0x30
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw JSONError.invalidEscape(offset: offset)
            }
            value = value << 4 | UInt32(digit)
            index += 1
        }
        return value
    }
}
