/// Something scheduled that can be called off, such as a timer.
///
/// `cancel()` may be called from any thread and more than once. Called on the
/// timer's own queue, it also guarantees the handler will not run afterwards;
/// from another thread, a handler that has already started finishes.
public protocol Cancellable: AnyObject, Sendable {
    func cancel()
}
