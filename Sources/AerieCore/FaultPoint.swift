#if DEBUG
import Foundation
import Synchronization
#endif

/// Named crash points for the crash-safety tests. A debug build started with
/// `AERIE_FAULT_POINT=name` (or `name:n`) ends the process at once, as `kill -9` would (no
/// shutdown, no flush), the first (or n-th) time execution reaches `reach("name")`. Release
/// builds compile every call to nothing.
public enum FaultPoint {
    /// Where `reach` is called; the names are what `AERIE_FAULT_POINT` takes.
    public static let names: Set<String> = [
        "inbound.beforeCommit", "inbound.afterStore", "outbox.afterPost", "accept.afterRecord", "oob.afterRecord",
        "send.afterRecord", "import.beforeCommit", "move.beforeRetire",
    ]

    @inlinable
    public static func reach(_ name: String) {
        #if DEBUG
        hit(name)
        #endif
    }

    #if DEBUG
    @usableFromInline
    static func hit(_ name: String) {
        guard let armed = armed, armed.name == name else { return }
        let count = hits.withLock { value -> Int in
            value += 1
            return value
        }
        if count == armed.count {
            FileHandle.standardError.write(Data("aerie: fault point \(name) reached, exiting\n".utf8))
            _exit(137)
        }
    }

    private static let armed: (name: String, count: Int)? = {
        guard let raw = ProcessInfo.processInfo.environment["AERIE_FAULT_POINT"], !raw.isEmpty else { return nil }
        let parts = raw.split(separator: ":", maxSplits: 1).map(String.init)
        return (parts[0], parts.count > 1 ? Int(parts[1]) ?? 1 : 1)
    }()

    private static let hits = Mutex(0)
    #endif
}
