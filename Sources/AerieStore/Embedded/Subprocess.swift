import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Runs a command to completion, blocking: call only from a thread-pool thread.
///
/// Not Foundation's `Process`: on Linux it learns of a child's exit through a descriptor the
/// child inherits, and `pg_ctl start` leaves a daemon holding every inherited descriptor, so the
/// wait never ends. Here the child gets only stdin (`/dev/null`) and stdout/stderr (a temporary
/// file), and we `waitpid` for it.
///
/// When `user` is given (we are root and PostgreSQL refuses to run as root), the command runs
/// through `runuser -u <user> --`.
package enum Subprocess {
    package struct Outcome {
        package var status: Int32
        package var output: String
    }

    package static func run(
        _ executable: URL, _ arguments: [String], as user: String?, in directory: URL
    ) throws -> Outcome {
        var argv = [executable.path] + arguments
        if let user { argv = [try runuser().path, "-u", user, "--"] + argv }
        let outputPath = FileManager.default.temporaryDirectory
            .appendingPathComponent("aerie-subprocess-\(UUID().uuidString).log").path
        defer { unlink(outputPath) }

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        GNUSpawnActions.closeFrom(&actions, 3)
        GNUSpawnActions.changeDirectory(&actions, directory.path)

        // Start the child with default signal handling (NIO ignores SIGPIPE, and ignored
        // signals survive exec) and nothing blocked.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGPIPE, SIGCHLD, SIGINT, SIGTERM, SIGQUIT, SIGHUP] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        var empty = sigset_t()
        sigemptyset(&empty)
        posix_spawnattr_setsigmask(&attributes, &empty)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))

        var pid: pid_t = 0
        let spawned = CStringArray.with(argv) { argvPointer in
            posix_spawn(
                &pid, argv[0], &actions, &attributes,
                UnsafeMutablePointer(mutating: argvPointer).withMemoryRebound(
                    to: UnsafeMutablePointer<CChar>?.self, capacity: argv.count + 1
                ) { $0 },
                environ)
        }
        guard spawned == 0 else {
            throw DatabaseSetupError("cannot run \(argv[0]): \(String(cString: strerror(spawned)))")
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 {
            guard errno == EINTR else {
                throw DatabaseSetupError("waiting for \(argv[0]) failed: \(String(cString: strerror(errno)))")
            }
        }
        // WIFEXITED / WEXITSTATUS; a signal death reports 128 + signal, like a shell.
        let exitStatus = status & 0x7f == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        let output = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        return Outcome(status: exitStatus, output: output)
    }

    private static func runuser() throws -> URL {
        for path in ["/usr/sbin/runuser", "/sbin/runuser", "/usr/bin/runuser"]
        where FileManager.default.isExecutableFile(atPath: path) {
            return URL(fileURLWithPath: path)
        }
        throw DatabaseSetupError("running as root needs runuser (util-linux) to start PostgreSQL as the postgres user")
    }
}

/// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34) and `..._addchdir_np` (2.29): their
/// declarations sit behind `_GNU_SOURCE`, which Swift's Glibc module does not define, so they are
/// looked up at run time. Where missing, the child simply keeps the descriptor or directory.
private enum GNUSpawnActions {
    private typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
    private typealias ChangeDirectory =
        @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, UnsafePointer<CChar>) -> Int32

    static func closeFrom(_ actions: UnsafeMutablePointer<posix_spawn_file_actions_t>, _ lowest: Int32) {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np")
        else { return }
        _ = unsafeBitCast(symbol, to: CloseFrom.self)(actions, lowest)
    }

    static func changeDirectory(_ actions: UnsafeMutablePointer<posix_spawn_file_actions_t>, _ path: String) {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addchdir_np")
        else { return }
        _ = path.withCString { unsafeBitCast(symbol, to: ChangeDirectory.self)(actions, $0) }
    }
}
