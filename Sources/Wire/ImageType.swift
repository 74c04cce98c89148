/// Recognises the image formats chat apps send from their first bytes, so a stored file's
/// content type is what the bytes are, not what a client claimed.
public enum ImageType {
    /// "image/jpeg", "image/png", "image/gif" or "image/webp"; nil for anything else.
    public static func sniff(_ bytes: some Collection<UInt8>) -> String? {
        let head = Array(bytes.prefix(12))
        if head.starts(with: [0xFF, 0xD8, 0xFF]) { return "image/jpeg" }
        if head.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return "image/png" }
        if head.starts(with: Array("GIF87a".utf8)) || head.starts(with: Array("GIF89a".utf8)) { return "image/gif" }
        if head.count == 12, head.starts(with: Array("RIFF".utf8)), Array(head[8..<12]) == Array("WEBP".utf8) { return "image/webp" }
        return nil
    }

    /// The usual file extension of a sniffed type.
    public static func fileExtension(_ type: String) -> String {
        switch type {
        case "image/jpeg": return "jpg"
        case "image/png": return "png"
        case "image/gif": return "gif"
        case "image/webp": return "webp"
        default: return "bin"
        }
    }
}
