import Foundation
import Testing

/// Where every test must run: with CI=true, or as root (CI runs as root, and root can set up what
/// these tests need). Tools/test uses the same rule for its steps.
public let everyTestMustRun = ProcessInfo.processInfo.environment["CI"] == "true" || getuid() == 0

/// A test that cannot run on this machine (no IPv6 on loopback, multicast not looped back on
/// `lo`). Where every test must run that is a failure; elsewhere a known issue, which `swift test`
/// counts in its summary and Tools/test reports as a skipped step, never as a pass.
public func environmentLimit(_ reason: String, sourceLocation: SourceLocation = #_sourceLocation) {
    if everyTestMustRun {
        Issue.record("\(reason) (a failure where every test must run: CI=true or root)", sourceLocation: sourceLocation)
    } else {
        withKnownIssue("could not run here: \(reason)") {
            Issue.record("\(reason)", sourceLocation: sourceLocation)
        }
    }
}
