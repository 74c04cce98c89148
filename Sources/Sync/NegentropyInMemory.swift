extension NegentropySession {
    /// Runs a whole reconciliation between two in-memory sets, `a` initiating, and reports what
    /// it learned and cost. For tests and benchmarks: it exercises exactly the code a networked
    /// node uses, with the transport replaced by passing arrays.
    ///
    /// - Returns: `have` = ids in `a` but not `b`, `need` = ids in `b` but not `a`, the number of
    ///   round trips (initiator messages answered), and the bytes sent each way.
    public static func reconcileInMemory(
        _ a: [NegentropyItem], _ b: [NegentropyItem], frameSizeLimit: Int = 0
    ) throws(NegentropyError) -> (have: Set<[UInt8]>, need: Set<[UInt8]>, roundTrips: Int, bytesAtoB: Int, bytesBtoA: Int) {
        // Both sides are trusted here, so the peer-message limits are lifted.
        var initiator = try NegentropySession(items: a, frameSizeLimit: frameSizeLimit, maxMessageBytes: .max, maxRanges: .max)
        var responder = try NegentropySession(items: b, frameSizeLimit: frameSizeLimit, maxMessageBytes: .max, maxRanges: .max)
        // Each round makes progress, so this cap only catches a broken engine.
        let roundLimit = 64 + a.count + b.count

        var have = Set<[UInt8]>()
        var need = Set<[UInt8]>()
        var roundTrips = 0
        var bytesAtoB = 0
        var bytesBtoA = 0
        var query: [UInt8]? = try initiator.initiate()
        while let message = query {
            roundTrips += 1
            guard roundTrips <= roundLimit else { throw .roundLimitExceeded }
            bytesAtoB += message.count
            let reply = try responder.reconcile(message).next ?? []
            bytesBtoA += reply.count
            let step = try initiator.reconcile(reply)
            have.formUnion(step.have)
            need.formUnion(step.need)
            query = step.next
        }
        return (have, need, roundTrips, bytesAtoB, bytesBtoA)
    }
}
