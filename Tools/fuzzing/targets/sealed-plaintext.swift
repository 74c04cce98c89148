// libFuzzer target "sealed-plaintext": the check lives in Sources/FuzzChecks, shared with Tests/FuzzReplayTests.
import FuzzChecks

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    FuzzTarget.fuzz("sealed-plaintext", data, size)
}
