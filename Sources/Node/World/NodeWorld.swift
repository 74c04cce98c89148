import Dispatch

/// Everything a node takes from the world outside its own state: time, timers and hops between
/// queues, the network, and the randomness that changes what it does. A running node gets
/// `.system` (the wall clock, Dispatch and real sockets); a simulation gets one world per node
/// that it drives from a single thread, from a seed, so that one seed replays one run event for
/// event (Sources/Simulation).
///
/// Every concern is a protocol of its own, small enough that a second implementation is cheap.
public struct NodeWorld: Sendable {
    public var clock: any NodeClock
    public var scheduler: any NodeScheduler
    public var network: any NodeNetwork
    public var random: any NodeRandom

    public init(clock: any NodeClock, scheduler: any NodeScheduler, network: any NodeNetwork, random: any NodeRandom) {
        self.clock = clock
        self.scheduler = scheduler
        self.network = network
        self.random = random
    }

    /// The real world: system clocks, Dispatch queues and timers, sockets, libsodium's randomness.
    public static let system = NodeWorld(clock: SystemClock(), scheduler: DispatchScheduler(),
                                         network: SocketNetwork(), random: SystemRandom())
}
