import Testing
import TestSupport

/// Each test of Protocol.md's vectors picks the vectors of its own kind, so a vector of a kind no
/// test picks would pass unchecked. The kinds some test checks are listed here: a vector of any
/// other kind fails until a test checks it and its kind joins the list.
@Suite("Protocol.md vector kinds")
struct ProtocolVectorKindsTests {
    /// Kind -> the test that checks it.
    static let checked: [String: String] = [
        "record": "WireTests/ProtocolVectorTests.records",
        "manifest-record": "WireTests/ProtocolVectorTests.blobRecords",
        "file-record": "WireTests/ProtocolVectorTests.blobRecords",
        "large-write-record": "WireTests/ProtocolVectorTests.largeWrites",
        "export": "WireTests/ProtocolVectorTests.exportStream",
        "network": "SyncTests/ProtocolNetworkVectorTests",
        "live": "SyncTests/ProtocolNetworkVectorTests.liveValues",
        "datagram": "SyncTests/ProtocolNetworkVectorTests.datagrams",
        "session": "SyncTests/ProtocolNetworkVectorTests.sessionFrames",
        "handshake": "SyncTests/ProtocolNetworkVectorTests.handshake",
        "reconcile": "SyncTests/ProtocolReconcileVectorTests.exchanges",
        "private-key-record": "PrivateTests/PrivateVectorTests.keyRecord",
        "private-write": "PrivateTests/PrivateVectorTests.sealedWrite",
        "sealed-file": "PrivateTests/SealedFileTests.vector",
        "sealed-live": "PrivateTests/LiveSealingTests.vector",
    ]

    @Test("every vector is of a kind some test checks")
    func everyKindIsChecked() throws {
        let vectors = try ProtocolVectors.all()
        #expect(!vectors.isEmpty)
        for vector in vectors {
            let kind = vector["kind"] ?? "(none)"
            #expect(Self.checked[kind] != nil, "vector \(vector["name"] ?? "?") is of kind \(kind), which no test checks")
        }
    }
}
