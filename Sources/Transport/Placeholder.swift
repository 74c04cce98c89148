// Dispatch-source sockets and timers.
