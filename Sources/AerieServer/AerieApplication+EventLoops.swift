import NIOCore
import NIOPosix

extension AerieApplication {
    /// Makes NIO's event loops (`MultiThreadedEventLoopGroup.singleton`, the group every listener
    /// and client of the server uses) Swift concurrency's global executor. A task resumed by a
    /// channel (a request line, an inbound POST) then runs on the loop that read it, and its
    /// answer is written from that loop, where with Swift's own pool each such step was a
    /// thread switch and a futex wake-up. Blocking work still goes to the dedicated thread
    /// pools (database, curl); nothing may block a task, as before.
    ///
    /// Call once, first thing in `main`, before any task exists; returns false where the
    /// runtime has no hook for it (the server then runs as without it).
    public static func runTasksOnEventLoops() -> Bool {
        NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor()
    }
}
