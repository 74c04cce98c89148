// The sans-IO protocol state machines (see README Architecture).
