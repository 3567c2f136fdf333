/// Lets a server's channel initializers reach the stand-in object that is created only once
/// the server is bound (it needs the port).
final class LateBound<Value: AnyObject & Sendable>: @unchecked Sendable {
    // Written once before the first connection is accepted, then only read.
    var value: Value?
}
