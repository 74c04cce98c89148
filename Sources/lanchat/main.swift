import CJemalloc
import CLI

// The process allocates through jemalloc (Package.swift says why): its version is asked for
// here, which also makes the link keep the library whatever else the executable refers to.
var version: UnsafePointer<CChar>? = nil
var size = MemoryLayout<UnsafePointer<CChar>?>.size
precondition(mallctl("version", &version, &size, nil, 0) == 0 && version != nil, "lanchat was linked without jemalloc")

LanchatCLI.main()
