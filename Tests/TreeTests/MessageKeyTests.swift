import Testing
import Tree

@Suite("Message keys")
struct MessageKeyTests {
    let user = "iojj3XQJ8ZX9UtstPLpdcspnCb8dlBIb83SIAbQPb1w"  // seed 01 x 32, Protocol.md §10

    @Test("the tag of Protocol.md §5.4's example")
    func protocolExample() {
        #expect(MessageKey.tag(prefix: "-OAbCdEfGhIjKlMnOpQr", authorID: user) == "2PHpX4hK-mq1")
        #expect(MessageKey.bind("-OAbCdEfGhIjKlMnOpQr", to: user) == "-OAbCdEfGhIjKlMnOpQr2PHpX4hK-mq1")
        #expect(MessageKey.isBound("-OAbCdEfGhIjKlMnOpQr2PHpX4hK-mq1", to: user))
    }

    @Test("a key is bound to one author only, and only with its whole tag")
    func boundToOneAuthor() {
        let other = "gTl3Dqh9F19Wo1Rmw0x-zMuNipG07jeiXfYPW4_Js5Q"
        let key = MessageKey.bind("-OAbCdEfGhIjKlMnOpQr", to: user)
        #expect(!MessageKey.isBound(key, to: other))
        #expect(!MessageKey.isBound(String(key.dropLast()), to: user))
        #expect(!MessageKey.isBound(String(key.dropLast()) + "x", to: user))
        #expect(!MessageKey.isBound("-OAbCdEfGhIjKlMnOpQr", to: user), "an unbound push id")
        #expect(!MessageKey.isBound(MessageKey.tag(prefix: "", authorID: user), to: user), "a tag alone binds nothing")
        // Any text can be bound, non-ASCII too.
        #expect(MessageKey.isBound(MessageKey.bind("tin nhắn", to: user), to: user))
    }
}
