// Writes the seed corpus (FuzzSeeds in Sources/FuzzChecks) to the directory given as the first
// argument, one subdirectory per target. Run through `Tools/fuzz --make-corpus`.
import FuzzChecks
import Foundation

let root = URL(fileURLWithPath: CommandLine.arguments[1])
for seed in FuzzSeeds.all() {
    let directory = root.appendingPathComponent(seed.target.rawValue)
    try! FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    try! Data(seed.bytes).write(to: directory.appendingPathComponent(seed.name))
}
print("wrote \(FuzzSeeds.all().count) seeds to \(root.path)")
