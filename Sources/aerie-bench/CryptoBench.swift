import AerieCrypto
import Foundation

/// `aerie-bench crypto`: DIDComm v1 authcrypt pack + unpack (one recipient, 1 KiB) per second,
/// against the bare libsodium calls the same round trip needs. The ratio shows what the
/// envelope code (JSON, base64/base58, allocation) costs on top of the cryptography; target >= 0.8.
func runCryptoBench(iterations: Int) -> String {
    let iterations = max(1, iterations)
    let bench = CryptoBenchmarks(messageSize: 1024)
    var sink = 0
    // Warm up both paths (lazy libsodium init, allocator, caches).
    for _ in 0..<min(50, iterations) {
        sink &+= (try? bench.packUnpackOnce()) ?? 0
        sink &+= bench.rawPrimitivesOnce()
        sink &+= (try? bench.packUnpackScopedOnce()) ?? 0
        sink &+= (try? bench.packUnpackScopedOnce(sharedKeysKept: false)) ?? 0
    }
    // Interleave rounds so frequency scaling and noise hit both alike.
    let rounds = 5
    let perRound = max(1, iterations / rounds)
    var envelopeTime = Duration.zero
    var rawTime = Duration.zero
    var scopedTime = Duration.zero
    var unsharedTime = Duration.zero
    let clock = ContinuousClock()
    for _ in 0..<rounds {
        envelopeTime += clock.measure {
            for _ in 0..<perRound { sink &+= (try? bench.packUnpackOnce()) ?? 0 }
        }
        rawTime += clock.measure {
            for _ in 0..<perRound { sink &+= bench.rawPrimitivesOnce() }
        }
        scopedTime += clock.measure {
            for _ in 0..<perRound { sink &+= (try? bench.packUnpackScopedOnce()) ?? 0 }
        }
        unsharedTime += clock.measure {
            for _ in 0..<perRound { sink &+= (try? bench.packUnpackScopedOnce(sharedKeysKept: false)) ?? 0 }
        }
    }
    let total = Double(rounds * perRound)
    let envelopeRate = total / seconds(envelopeTime)
    let rawRate = total / seconds(rawTime)
    let scopedRate = total / seconds(scopedTime)
    let unsharedRate = total / seconds(unsharedTime)
    let ratio = envelopeRate / rawRate
    return """
        crypto: DIDComm v1 authcrypt pack+unpack, 1 recipient, 1 KiB, \(Int(total)) iterations
          pack+unpack:         \(format(envelopeRate)) ops/s  (\(format(1e6 / envelopeRate)) µs/op)
          raw libsodium calls: \(format(rawRate)) ops/s  (\(format(1e6 / rawRate)) µs/op)
          ratio:               \(String(format: "%.3f", ratio)) (target >= 0.8)\(ratio >= 0.8 ? "" : "  BELOW TARGET")
          between two tenants (keyScope), X25519 conversions kept:
            box shared keys kept:    \(format(scopedRate)) ops/s  (\(format(1e6 / scopedRate)) µs/op)
            box shared keys dropped: \(format(unsharedRate)) ops/s  (\(format(1e6 / unsharedRate)) µs/op)
        """ + (sink == Int.min ? " " : "")
}

private func seconds(_ d: Duration) -> Double {
    let (s, atto) = d.components
    return Double(s) + Double(atto) / 1e18
}

private func format(_ x: Double) -> String { String(format: "%.1f", x) }
