import Foundation

#if canImport(Glibc)
import Glibc
#endif

struct BenchFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// CPU time from /proc (user + system), in seconds.
enum ProcessCPU {
    static let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))

    /// `reapedChildren`: with the CPU of its children that exited and were waited for (fields
    /// 16 and 17), e.g. a postmaster's autovacuum workers and closed backends.
    static func seconds(pid: Int32, reapedChildren: Bool = false) -> Double {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return 0 }
        // Fields after the command name: state is field 3; utime and stime are fields 14 and 15,
        // the reaped children's cutime and cstime 16 and 17.
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 14, let user = Double(fields[11]), let system = Double(fields[12]),
            let childUser = Double(fields[13]), let childSystem = Double(fields[14])
        else { return 0 }
        return (user + system + (reapedChildren ? childUser + childSystem : 0)) / ticks
    }

    /// The benchmark cluster's processes: its postmaster and every process it started (backends,
    /// checkpointer, WAL writer...), so other clusters on a shared machine do not count; with no
    /// postmaster known, every process named `postgres`. Processes that exited (autovacuum
    /// workers, closed backends) count through the postmaster, which waits for them (all of a
    /// child's CPU then, its share before the run included).
    static func postgresSeconds(postmaster: Int32?) -> Double {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return 0 }
        var total = 0.0
        for entry in entries {
            guard let pid = Int32(entry),
                let comm = try? String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8),
                comm.hasPrefix("postgres")
            else { continue }
            if let postmaster, pid != postmaster, parent(of: pid) != postmaster { continue }
            total += seconds(pid: pid, reapedChildren: pid == postmaster)
        }
        return total
    }

    /// Field 4 of /proc/PID/stat.
    static func parent(of pid: Int32) -> Int32? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return nil }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        return fields.count > 1 ? Int32(fields[1]) : nil
    }
}
