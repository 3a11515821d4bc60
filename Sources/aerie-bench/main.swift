import AerieTesting
import Foundation

/// aerie-bench: benchmarks that print numbers. `aerie-bench rpc [--sessions N] [--seconds S]`,
/// `aerie-bench crypto [--iterations N]`, or `aerie-bench all`.
let arguments = Array(CommandLine.arguments.dropFirst())

/// The value after `name`, or `value` when `name` is absent; a value that is missing or not a
/// number ends the program with a clear error instead of running with the default.
func option(_ name: String, default value: Double) -> Double {
    guard let index = arguments.firstIndex(of: name) else { return value }
    guard index + 1 < arguments.count, let parsed = Double(arguments[index + 1]), parsed.isFinite, parsed >= 0 else {
        fail("\(name) needs a number, e.g. \(name) \(Int(value))")
    }
    return parsed
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("aerie-bench: \(message)\n(aerie-bench --help lists the commands and options)\n".utf8))
    exit(2)
}

/// Every option some command reads: a misspelt one is refused rather than silently ignored.
let valueOptions: Set<String> = [
    "--aerie-tenants", "--concurrency", "--connections", "--count", "--iterations", "--paced-rate", "--per-tenant",
    "--messages", "--peers", "--posters", "--rate", "--reuses", "--rounds", "--seconds", "--sessions", "--tenants", "--warmup", "--warmup-connections",
    "--writers",
]
let flagOptions: Set<String> = [
    "--acapy-wallet-file", "--analyze", "--backend-tenants", "--durable", "--no-metrics", "--return-route",
]

let usage = """
    USAGE: aerie-bench <rpc|crypto|ldp|connections|basic-messages|throughput|idle|messages|oob|hostile|events|scale|scale-writes|export|all> [options]

      rpc      JSON-RPC load: bare NIO echo ceiling, system.ping, authenticated settings.get and connections.get;
               closed loop (throughput) then paced (latency at a fixed offered load)
               --sessions N (100)  --seconds S (5)  --warmup S (1)
           --no-metrics: the servers record no metrics (as before issue 18; production records them)
               --paced-rate R (100): per-session req/s of the paced latency runs
               Needs PostgreSQL: AERIE_TEST_PG (superuser conninfo) or it starts a throwaway cluster.
      crypto   DIDComm v1 authcrypt pack+unpack vs the raw libsodium calls it needs
               --iterations N (3000)
      ldp      Linked Data proofs: Ed25519Signature2018 sign and verify of one credential, and present
               it (a signed DIF presentation with challenge and domain), per second and CPU per op,
               against ACA-Py 1.2.7's own code doing the same in the same run --seconds S (5).
               Needs the venv that ./scripts/test installs.
      connections  N connections from one ACA-Py 1.2.7 inviter, accepted by aerie-server (its own
               process) and by an ACA-Py 1.2.7 invitee, sequentially and C at a time: wall and CPU
               --count N (50)  --concurrency C (10). Needs the venv that ./scripts/test installs.
               --durable: its PostgreSQL runs with aerie-server's embedded settings (fsync,
               synchronous commit and full-page writes on; issue 16 goal 1 is stated for these)
               instead of the throwaway test settings (durability off).
               --warmup-connections N (0): N connections by each invitee, C at a time, before
               anything is measured (every pooled backend and ACA-Py's code paths warm);
               --analyze: then ANALYZE Aerie's database (what autovacuum does within a minute of a
               deployment). --rounds N (5): the invitees take turns, N turns each per mode, so
               both are measured over the same minutes (this host's speed drifts).
               --aerie-tenants N (1): Aerie's connections go to N tenants in turn (a hosted wallet's
               load; ACA-Py's invitee is one wallet either way). --backend-tenants: they are a
               backend's, which write the durable event log (the operator's do not).
               --return-route: Aerie's accepts pass returnRoute (the inviter answers on the
               Request's own HTTP response instead of POSTing the Response).
               --acapy-wallet-file: ACA-Py's invitee keeps its wallet in a sqlite file, as a
               deployed ACA-Py does, instead of in memory (--wallet-test, the default anchor).
      basic-messages  basic messages between one ACA-Py 1.2.7 peer and an Aerie tenant (aerie-server in its
               own process) and, in the same run, an ACA-Py 1.2.7 anchor: inbound (the peer sends, until
               stored) and outbound (messages.sendText / send-message, until the peer has it), one at a
               time and C at a time over C connections: CPU per message of the whole system (Aerie's
               PostgreSQL included), messages per CPU second, database round trips and commits per
               message, ratios. --count N (200) per mode  --concurrency C (10)  --rounds N (5)
               --warmup N (20) messages per side and direction first  --durable as connections.
               --acapy-wallet-file: the anchor keeps its wallet in a sqlite file (as connections).
      throughput  basic messages under load: --connections C (10) connections, spread over --peers N (2) ACA-Py
               1.2.7 peer processes (ten would overload two cores), all sending at once to an Aerie tenant
               (aerie-server in its own process) and, taking turns, to an ACA-Py 1.2.7 anchor: stored per second
               and per CPU-core-second of the whole system (Aerie's PostgreSQL included), ratio; then Aerie's
               messages.sendText, C at a time, to one peer and to 100 (loopback endpoints): deliveries per
               second. --count N (400) per side  --rounds N (4)  --warmup N (40)  --durable as connections.
      idle     aerie-server with its embedded cluster doing nothing: CPU ms per second of the server and
               of PostgreSQL over --seconds S (60) after --warmup S (20).
      messages messages.download of one tenant's 100 pending messages among --tenants N (10000) x
               --per-tenant M (100) seeded ones, --sessions N (10) for --seconds S (5), without and
               with an index on (tenant_id, status, received_at, uid) (the raw-line load also prints
               PostgreSQL's CPU per request, when it finds the cluster's processes); push latency from inbound
               POST to messages.received. Needs PostgreSQL as rpc does.
      oob      outOfBand.accept closed loop: row 4 (attachment only), the same invitation again,
               row 7 (attachment over an existing connection); --sessions N (10) --seconds S (5);
               then with an ACA-Py 1.2.7 inviter: row 3 once and --reuses N (20) row-6 reuses, each
               until reused. Needs PostgreSQL as rpc does and the ACA-Py venv.
      hostile  unauthenticated ~1 MiB hostile DIDComm bodies: CPU per envelope parse, then a live
               server under --posters N (4) concurrent POST loops for --seconds S (5): CPU per
               request and system.ping p50/p99 against idle; then the same kinds of body at 16 KiB (parsed
               in place, not on the parsing thread). Needs PostgreSQL as rpc does.
               --iterations N (20) parses per body

      events   the durable event log: --writers N (8) concurrent one-event transactions over --tenants N
               (100; past 100 the rest are seeded by SQL, e.g. 100000) tenants of one backend for
               --seconds S (5), streamed to one backend session
               (events/s written and streamed, stream lag); the same writes without the log's insert
               (its write cost); a replay from position 0. Needs PostgreSQL as rpc does.

      scale    connections.get, connections.list and session.authenticate of one tenant, paced
               (--sessions N (10) x --rate R (100) req/s, --seconds S (5) each), in a database of 100
               tenants and in one seeded by SQL up to --tenants N (100000) tenants holding
               --connections N (1000000) connections, each with its own server, both measured at
               once, for --rounds N (5) rounds: p99 large / small, the median of the rounds' ratios
               (issue 16: <= 1.5), with their spread and the pooled ratio. Needs PostgreSQL as rpc
               does.

      scale-writes  one tenant's writes, closed loop over --sessions N (4): inbound POSTs of basic messages packed
               beforehand, messages.sendText (delivered to a loopback endpoint), connections.accept of
               invitations made beforehand; in a database of that one tenant and in one seeded by SQL up to
               --tenants N (1000000) tenants holding --connections N (10000000) connections with their keys
               (vacuumed, analyzed, checkpointed), each with its own server, taking turns for --rounds N (3)
               rounds of --seconds S (5) per target: throughput and p99 at scale / at one tenant, medians of
               the rounds (issue 41: >= 0.9 and <= 1.2x). --durable as connections. Needs PostgreSQL as rpc
               does, and disk for the seeded database (about 1 GB per million connections).

      export   a tenant archive of one tenant with --messages N (200000) seeded mailbox rows: MB/s and the
               process's peak RSS before and after the export; then MB/s importing it into a second server.
               Needs PostgreSQL as rpc does.

    Build with -c release for meaningful numbers: swift run -c release aerie-bench all
    """

if arguments.contains("--help") || arguments.contains("-h") || arguments.first == "help" {
    print(usage)
    exit(0)
}
guard let command = arguments.first, ["rpc", "crypto", "ldp", "connections", "basic-messages", "throughput", "idle", "messages", "oob", "hostile", "events", "scale", "scale-writes", "export", "all"].contains(command) else {
    print(usage)
    exit(2)
}
do {
    var index = 1
    while index < arguments.count {
        let argument = arguments[index]
        if valueOptions.contains(argument) {
            index += 2
        } else if flagOptions.contains(argument) {
            index += 1
        } else {
            fail("unknown option \(argument) for \(command)")
        }
    }
}

if command == "crypto" || command == "all" {
    print(runCryptoBench(iterations: Int(option("--iterations", default: 3000))))
}
if command == "ldp" || command == "all" {
    do {
        print(try runLinkedDataBench(seconds: option("--seconds", default: 5)))
    } catch {
        FileHandle.standardError.write(Data("aerie-bench ldp failed: \(error)\n".utf8))
        exit(1)
    }
}
if command == "rpc" || command == "all" {
    let bench = RPCBench(
        sessions: Int(option("--sessions", default: 100)), seconds: option("--seconds", default: 5),
        warmup: option("--warmup", default: 1), pacedRatePerSession: option("--paced-rate", default: 100),
        metrics: !arguments.contains("--no-metrics"))
    do {
        print(try await bench.run())
    } catch {
        FileHandle.standardError.write(Data("aerie-bench rpc failed: \(error)\n".utf8))
        exit(1)
    }
}
if command == "connections" || command == "all" {
    if arguments.contains("--durable") { TestPostgres.useServerDefaults() }
    let bench = ConnectionsBench(
        count: Int(option("--count", default: 50)), concurrency: Int(option("--concurrency", default: 10)),
        warmup: Int(option("--warmup-connections", default: 0)), analyze: arguments.contains("--analyze"),
        tenants: max(1, Int(option("--aerie-tenants", default: 1))), backendTenants: arguments.contains("--backend-tenants"),
        returnRoute: arguments.contains("--return-route"), acapyWalletFile: arguments.contains("--acapy-wallet-file"),
        rounds: max(1, Int(option("--rounds", default: 5))))
    do {
        print(try await bench.run())
    } catch {
        FileHandle.standardError.write(Data("aerie-bench connections failed: \(error)\n".utf8))
        exit(1)
    }
}
if command == "basic-messages" || command == "all" {
    if arguments.contains("--durable") { TestPostgres.useServerDefaults() }
    let bench = BasicMessagesBench(
        count: Int(option("--count", default: 200)), concurrency: Int(option("--concurrency", default: 10)),
        rounds: max(1, Int(option("--rounds", default: 5))), warmup: Int(option("--warmup", default: 20)),
        acapyWalletFile: arguments.contains("--acapy-wallet-file"))
    do {
        print(try await bench.run())
    } catch {
        FileHandle.standardError.write(Data("aerie-bench basic-messages failed: \(error)\n".utf8))
        exit(1)
    }
}
if command == "throughput" {
    if arguments.contains("--durable") { TestPostgres.useServerDefaults() }
    let bench = ThroughputBench(
        count: Int(option("--count", default: 400)), peers: max(1, Int(option("--peers", default: 2))),
        connections: max(1, Int(option("--connections", default: 10))), rounds: max(1, Int(option("--rounds", default: 4))),
        warmup: Int(option("--warmup", default: 40)))
    do {
        print(try await bench.run())
    } catch {
        FileHandle.standardError.write(Data("aerie-bench throughput failed: \(error)\n".utf8))
        exit(1)
    }
}
if command == "idle" {
    do {
        print(try await IdleBench(seconds: option("--seconds", default: 60), warmup: option("--warmup", default: 20)).run())
    } catch {
        FileHandle.standardError.write(Data("aerie-bench idle failed: \(error)\n".utf8))
        exit(1)
    }
}
if command == "messages" || command == "all" {
    let bench = MessagesBench(
        tenants: Int(option("--tenants", default: 10_000)), perTenant: Int(option("--per-tenant", default: 100)),
        sessions: Int(option("--sessions", default: 10)), seconds: option("--seconds", default: 5))
    do {
        print(try await bench.run())
    } catch {
        FileHandle.standardError.write(Data("aerie-bench messages failed: \(error)\n".utf8))
        exit(1)
    }
}
if command == "oob" || command == "all" {
    let bench = OutOfBandBench(
        sessions: Int(option("--sessions", default: 10)), seconds: option("--seconds", default: 5),
        reuses: Int(option("--reuses", default: 20)))
    do {
        print(try await bench.run())
    } catch {
        FileHandle.standardError.write(Data("aerie-bench oob failed: \(error)\n".utf8))
        exit(1)
    }
}
if command == "hostile" || command == "all" {
    let bench = HostileBench(
        iterations: Int(option("--iterations", default: 20)), posters: Int(option("--posters", default: 4)),
        seconds: option("--seconds", default: 5))
    do {
        print(try await bench.run())
    } catch {
        FileHandle.standardError.write(Data("aerie-bench hostile failed: \(error)\n".utf8))
        exit(1)
    }
}
if command == "events" || command == "all" {
    let bench = EventsBench(
        tenants: Int(option("--tenants", default: 100)), writers: Int(option("--writers", default: 8)),
        seconds: option("--seconds", default: 5))
    do {
        print(try await bench.run())
    } catch {
        FileHandle.standardError.write(Data("aerie-bench events failed: \(error)\n".utf8))
        exit(1)
    }
}
if command == "scale" || command == "all" {
    let bench = ScaleBench(
        tenants: Int(option("--tenants", default: 100_000)), connections: Int(option("--connections", default: 1_000_000)),
        sessions: Int(option("--sessions", default: 10)), seconds: option("--seconds", default: 5),
        ratePerSession: option("--rate", default: 100), rounds: max(1, Int(option("--rounds", default: 5))))
    do {
        print(try await bench.run())
    } catch {
        FileHandle.standardError.write(Data("aerie-bench scale failed: \(error)\n".utf8))
        exit(1)
    }
}
if command == "scale-writes" {
    if arguments.contains("--durable") { TestPostgres.useServerDefaults() }
    let bench = ScaleWritesBench(
        tenants: Int(option("--tenants", default: 1_000_000)), connections: Int(option("--connections", default: 10_000_000)),
        sessions: max(1, Int(option("--sessions", default: 4))), seconds: option("--seconds", default: 5),
        rounds: max(1, Int(option("--rounds", default: 3))))
    do {
        print(try await bench.run())
    } catch {
        FileHandle.standardError.write(Data("aerie-bench scale-writes failed: \(error)\n".utf8))
        exit(1)
    }
}
if command == "export" {
    do {
        // Each figure is printed as it is measured.
        _ = try await ExportBench(messages: Int(option("--messages", default: 200_000))).run()
    } catch {
        FileHandle.standardError.write(Data("aerie-bench export failed: \(error)\n".utf8))
        exit(1)
    }
}
exit(0)
