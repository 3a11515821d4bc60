import Foundation

/// aerie-bench: benchmarks that print numbers. `aerie-bench rpc [--sessions N] [--seconds S]`,
/// `aerie-bench crypto [--iterations N]`, or `aerie-bench all`.
let arguments = Array(CommandLine.arguments.dropFirst())

func option(_ name: String, default value: Double) -> Double {
    guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count, let parsed = Double(arguments[index + 1]) else {
        return value
    }
    return parsed
}

let usage = """
    USAGE: aerie-bench <rpc|crypto|all> [options]

      rpc      closed-loop JSON-RPC load: bare NIO echo ceiling, system.ping, authenticated settings.get
               --sessions N (100)  --seconds S (5)  --warmup S (1)
               Needs PostgreSQL: AERIE_TEST_PG (superuser conninfo) or it starts a throwaway cluster.
      crypto   DIDComm v1 authcrypt pack+unpack vs the raw libsodium calls it needs
               --iterations N (3000)

    Build with -c release for meaningful numbers: swift run -c release aerie-bench all
    """

guard let command = arguments.first, ["rpc", "crypto", "all"].contains(command) else {
    print(usage)
    exit(arguments.first == "--help" || arguments.first == "-h" ? 0 : 2)
}

if command == "crypto" || command == "all" {
    print(runCryptoBench(iterations: Int(option("--iterations", default: 3000))))
}
if command == "rpc" || command == "all" {
    let bench = RPCBench(
        sessions: Int(option("--sessions", default: 100)), seconds: option("--seconds", default: 5),
        warmup: option("--warmup", default: 1))
    do {
        print(try await bench.run())
    } catch {
        FileHandle.standardError.write(Data("aerie-bench rpc failed: \(error)\n".utf8))
        exit(1)
    }
}
exit(0)
