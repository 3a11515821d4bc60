import Foundation
import Synchronization

/// How many deliveries run at once in this process, and to one destination: a slow or
/// tarpitting peer holds at most `perDestination` of the `concurrency` slots, and the due scan
/// skips its rows while it does, so it delays only its own.
///
/// A destination is the address a delivery goes to, not the URL's text: every port of one host
/// is one destination (an IPv4 address, or the /64 of an IPv6 one, which one holder controls
/// whole). A host written as an address is that address; a host name counts as the address its
/// last delivery reached (learned from libcurl, `Outcome`), or as its name until one did.
///
/// A circuit breaker bounds what tarpits take together: a destination whose last delivery
/// got no answer within the time limit (`Outcome.timedOut`) is slow, and runs one delivery at a
/// time, and all slow destinations together run at most `slowShare` (a quarter of the slots),
/// their other rows waiting in the outbox; an answer (any HTTP status, a refused connection)
/// makes it a destination like the others again.
final class DeliveryLimits: Sendable {
    /// How a delivery's destination fared.
    enum Outcome: Sendable, Equatable {
        /// An HTTP answer, or a failure that came quickly (refused, unresolved, refused by policy).
        case answered(address: String?)
        /// No answer within the time limit.
        case timedOut(address: String?)
    }

    /// A slot taken by `start`: given back to `finish`.
    struct Slot: Sendable, Hashable {
        /// `scheme://host:port` as `aerie.outbox_destination` names it (schema/0019).
        var destination: String
        /// What the slot counts against (an address, or `name:` and a host name).
        var key: String
    }

    let concurrency: Int
    let perDestination: Int
    /// Slots all slow destinations hold together at most.
    let slowShare: Int
    /// Entries of each memory (learned addresses, slow keys, destinations seen) at most: past it
    /// the memory starts again empty (it only ever costs a little fairness).
    static let memoryLimit = 4096
    /// Destinations passed to the due scan to skip, at most.
    static let maxBusyDestinations = 512

    private struct State {
        var running: [String: Int] = [:]
        var total = 0
        /// Host name → the address key its last delivery reached.
        var learned: [String: String] = [:]
        var slow: Set<String> = []
        /// Destination → its key, for the due scan's skip list.
        var seen: [String: String] = [:]
        /// Destination → its host and address key (`Host`); an address as libcurl wrote it →
        /// its key. Worked out once per text: parsing them for each delivery costs about 2 % of the
        /// server's CPU per message sent.
        var hosts: [String: Host] = [:]
        var addressKeys: [String: String] = [:]

        /// The key of `destination`, as `DeliveryLimits.key(of:learned:)` answers.
        mutating func key(of destination: String) -> String {
            let host: Host
            if let known = hosts[destination] {
                host = known
            } else {
                host = Host(destination)
                remember(&hosts, destination, host)
            }
            return host.key(learned: learned)
        }

        /// `DeliveryLimits.addressKey(address)`.
        mutating func addressKey(_ address: String) -> String? {
            if let known = addressKeys[address] { return known.isEmpty ? nil : known }
            let key = DeliveryLimits.addressKey(address)
            remember(&addressKeys, address, key ?? "")
            return key
        }
    }

    /// What a destination's key is made of: its host, and the host's address key when it is an
    /// address.
    struct Host: Sendable {
        var name: String
        var addressKey: String?
        /// `name:` and the host: the key of a name whose address is not learned.
        var nameKey: String

        init(_ destination: String) {
            let host = DeliveryLimits.host(of: destination)
            name = host
            addressKey = DeliveryLimits.addressKey(host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host)
            nameKey = "name:" + host
        }

        /// Its address key, else the address learned for its name, else `nameKey`.
        func key(learned: [String: String]) -> String {
            addressKey ?? learned[name] ?? nameKey
        }
    }
    private let state = Mutex(State())

    init(concurrency: Int, perDestination: Int) {
        self.concurrency = max(1, concurrency)
        self.perDestination = max(1, min(perDestination, concurrency))
        self.slowShare = max(1, self.concurrency / 4)
    }

    /// Free slots in this process.
    var available: Int { concurrency - state.withLock { $0.total } }

    /// The destinations whose key is at its limit: the due scan skips their rows.
    var busyDestinations: Set<String> {
        state.withLock { state in
            var busy: Set<String> = []
            for (destination, key) in state.seen where !Self.admits(key, state, self) {
                busy.insert(destination)
                if busy.count >= Self.maxBusyDestinations { break }
            }
            return busy
        }
    }

    /// Takes a slot for `destination`, or answers nil when the process or the destination is at
    /// its limit.
    func start(_ destination: String) -> Slot? {
        state.withLock { state in
            let key = state.key(of: destination)
            remember(&state.seen, destination, key)
            guard Self.admits(key, state, self) else { return nil }
            state.running[key, default: 0] += 1
            state.total += 1
            return Slot(destination: destination, key: key)
        }
    }

    /// Gives back `slot`, learning from `outcome` the address its host name reached and
    /// whether the destination is slow; answers whether the loop should scan again (the last
    /// scan left due rows behind, `scanned(leftRows:)`).
    @discardableResult
    func finish(_ slot: Slot, outcome: Outcome = .answered(address: nil)) -> Bool {
        state.withLock { state in
            let left = state.running[slot.key, default: 1] - 1
            state.running[slot.key] = left > 0 ? left : nil
            state.total -= 1
            var keys = [slot.key]
            let (address, timedOut) =
                switch outcome {
                case .answered(let address): (address, false)
                case .timedOut(let address): (address, true)
                }
            if let address, let addressKey = state.addressKey(address), addressKey != slot.key {
                keys.append(addressKey)
                if let host = Self.hostName(ofKey: slot.key) { remember(&state.learned, host, addressKey) }
                remember(&state.seen, slot.destination, addressKey)
            }
            for key in keys {
                if timedOut {
                    if state.slow.count >= Self.memoryLimit { state.slow.removeAll() }
                    state.slow.insert(key)
                } else {
                    state.slow.remove(key)
                }
            }
        }
        return lastScanLeftRows.withLock { $0 }
    }

    /// Whether `destination` counts as slow now (tests and metrics).
    func isSlow(_ destination: String) -> Bool {
        state.withLock { state in state.slow.contains(state.key(of: destination)) }
    }

    /// Whether one more delivery to `key` fits.
    private static func admits(_ key: String, _ state: State, _ limits: DeliveryLimits) -> Bool {
        guard state.total < limits.concurrency else { return false }
        let running = state.running[key, default: 0]
        guard state.slow.contains(key) else { return running < limits.perDestination }
        guard running < 1 else { return false }
        let slowRunning = state.slow.reduce(0) { $0 + state.running[$1, default: 0] }
        return slowRunning < limits.slowShare
    }

    // MARK: - Keys

    /// The key of `scheme://host:port`: the host's address key when it is an address or a name
    /// whose address was learned, else `name:` and the host.
    static func key(of destination: String, learned: [String: String] = [:]) -> String {
        Host(destination).key(learned: learned)
    }

    private static func hostName(ofKey key: String) -> String? {
        key.hasPrefix("name:") ? String(key.dropFirst(5)) : nil
    }

    /// The host of `scheme://[user@]host[:port]` (lower-cased by the caller), brackets kept.
    static func host(of destination: String) -> String {
        var authority = Substring(destination)
        if let range = destination.range(of: "://") { authority = destination[range.upperBound...] }
        if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
        if authority.hasPrefix("[") {
            if let close = authority.firstIndex(of: "]") { return String(authority[...close]) }
            return String(authority)
        }
        if let colon = authority.firstIndex(of: ":") { return String(authority[..<colon]) }
        return String(authority)
    }

    /// An address's key: an IPv4 address as written by `inet_ntop`, an IPv6 one as its /64
    /// (an IPv4-mapped one as its IPv4 address); nil when `text` is no address.
    static func addressKey(_ text: String) -> String? {
        guard !text.isEmpty, text.utf8.count <= 45, !text.utf8.contains(0) else { return nil }
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            return withUnsafeBytes(of: &v4) { $0.map(String.init).joined(separator: ".") }
        }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, text, &v6) == 1 else { return nil }
        let bytes = withUnsafeBytes(of: &v6) { Array($0) }
        if bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xFF, bytes[11] == 0xFF {
            return bytes[12...].map(String.init).joined(separator: ".")
        }
        return stride(from: 0, to: 8, by: 2).map { String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16) }
            .joined(separator: ":") + "::/64"
    }

    /// Whether the last due scan may have left due rows behind: only then does a delivery that
    /// ends cost another scan (a round trip each; most end with nothing left to send).
    private let lastScanLeftRows = Mutex(true)

    func scanned(leftRows: Bool) {
        lastScanLeftRows.withLock { $0 = leftRows }
    }
}

/// Puts `value` in a memory of at most `DeliveryLimits.memoryLimit` entries: past it the memory
/// starts again empty (it only ever costs a little fairness, or a parse).
private func remember<Value>(_ memory: inout [String: Value], _ name: String, _ value: Value) {
    if memory[name] == nil, memory.count >= DeliveryLimits.memoryLimit { memory.removeAll() }
    memory[name] = value
}
