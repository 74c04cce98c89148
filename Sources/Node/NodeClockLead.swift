import Dispatch
import Tree
import Wire

/// Clock skew as the node sees it: how far ahead of this node's wall clock a peer stamps the
/// records it writes itself. A record stamped more than the drift bound ahead is refused until
/// the local clock catches up (HybridLogicalClock), so a peer whose clock runs ahead by minutes
/// has its writes held back; `lanchat doctor` reports the lead of each connected peer.
extension Node {
    /// Keeps, for the session's peer, the largest lead among the records it authored in this
    /// batch. Only the peer's own records count (relayed ones say nothing of its clock), so the
    /// table holds one entry per peer that ever had a session.
    func noteClockLead(_ records: [Record], from slot: SessionSlot) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard let peer = slot.peer else { return }
        let now = Int64(wallMillis())
        var lead: Int64?
        for record in records where record.author == peer {
            let ahead = Int64(HybridLogicalClock.millis(of: record.clock)) - now
            lead = max(lead ?? ahead, ahead)
        }
        guard let lead else { return }
        clockLead[peer] = max(clockLead[peer] ?? lead, lead)
    }
}
