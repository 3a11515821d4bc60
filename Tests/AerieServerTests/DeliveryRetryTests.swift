import Foundation
import Testing

@testable import AerieServer

/// The retry rules of outbound delivery without I/O (`DeliveryRetry`): capped exponential
/// backoff, the peer's `Retry-After` within the cap, the last try at the horizon's end and none
/// after it, and which answers refuse a message for good. The live cases (a full mailbox, a
/// 503 that clears, a peer down past the horizon) are `DeliveryRetryLiveTests`.
@Suite struct DeliveryRetryTests {
    let retry = DeliveryRetry(
        backoff: .seconds(2), maxBackoff: .seconds(3600), horizon: .seconds(72 * 3600), protocolHorizon: .seconds(3600))
    let created = Date(timeIntervalSince1970: 1_800_000_000)

    func wait(_ attempts: Int, after elapsed: TimeInterval = 0, carriesMessage: Bool = true, retryAfter: Duration? = nil)
        -> TimeInterval?
    {
        let now = created.addingTimeInterval(elapsed)
        return retry.nextAttempt(attempts: attempts, createdAt: created, now: now, carriesMessage: carriesMessage, retryAfter: retryAfter)?
            .timeIntervalSince(now)
    }

    @Test func backoffDoublesUpToTheCap() {
        #expect(wait(1) == 2)
        #expect(wait(2) == 4)
        #expect(wait(5) == 32)
        #expect(wait(12) == 3600)
        // However many attempts: no overflow, still the cap.
        #expect(wait(10_000) == 3600)
    }

    @Test func retryAfterReplacesTheBackoffWithinTheCap() {
        #expect(wait(1, retryAfter: .seconds(120)) == 120)
        #expect(wait(9, retryAfter: .seconds(1)) == 1)
        // A peer asking for a week is asked again within the hour.
        #expect(wait(1, retryAfter: .seconds(7 * 86_400)) == 3600)
    }

    @Test func theLastTryIsAtTheHorizonAndNoneAfterIt() {
        let horizon = 72.0 * 3600
        #expect(wait(60, after: horizon - 100) == 100)
        #expect(wait(61, after: horizon) == nil)
        #expect(wait(61, after: horizon + 5) == nil)
        // A row older than the horizon that never got a try (a server down for days) fails on its first failure.
        #expect(wait(1, after: horizon * 2) == nil)
    }

    /// A handshake Response to a stranger's dead endpoint is given up after an hour, not three days.
    @Test func whatCarriesNoMessageHasTheShorterProtocolHorizon() {
        #expect(wait(12, after: 3000, carriesMessage: false) == 600)
        #expect(wait(13, after: 3600, carriesMessage: false) == nil)
        #expect(wait(13, after: 3600, carriesMessage: true) == 3600)
        // Never longer than the message horizon.
        let short = DeliveryRetry(backoff: .seconds(1), maxBackoff: .seconds(10), horizon: .seconds(60), protocolHorizon: .seconds(3600))
        #expect(short.horizon(carriesMessage: false) == .seconds(60))
    }

    @Test func onlyRefusalsOfTheMessageItselfAreFinal() {
        for status in [400, 401, 403, 404, 405, 410, 413, 415, 422] { #expect(DeliveryRetry.refusesForGood(status), "\(status)") }
        for status in [0, 100, 204, 301, 302, 408, 425, 429, 500, 502, 503, 504, 599] {
            #expect(!DeliveryRetry.refusesForGood(status), "\(status)")
        }
    }
}

/// Delivery slots by destination address and the circuit breaker (`DeliveryLimits`), without
/// I/O. The live tarpit is `DeliveryFairnessTests`.
@Suite struct DeliveryLimitsTests {
    @Test func destinationsAreKeyedByAddressNotByURLText() {
        #expect(DeliveryLimits.key(of: "http://10.1.2.3:8001") == "10.1.2.3")
        #expect(DeliveryLimits.key(of: "https://10.1.2.3") == "10.1.2.3")
        #expect(DeliveryLimits.key(of: "http://user@10.1.2.3:9") == "10.1.2.3")
        #expect(DeliveryLimits.key(of: "http://[2001:db8:1:2::5]:80") == "2001:db8:1:2::/64")
        #expect(DeliveryLimits.key(of: "http://[2001:db8:1:2:ffff::9]") == "2001:db8:1:2::/64")
        #expect(DeliveryLimits.key(of: "http://[::ffff:10.1.2.3]:1") == "10.1.2.3")
        #expect(DeliveryLimits.key(of: "http://peer.example:8020") == "name:peer.example")
        #expect(DeliveryLimits.key(of: "http://peer.example:8020", learned: ["peer.example": "10.9.9.9"]) == "10.9.9.9")
        // Spellings only curl would read as an address stay names until a delivery says where they went.
        #expect(DeliveryLimits.key(of: "http://0x7f.1:80") == "name:0x7f.1")
    }

    @Test func eightPortsOfOneHostShareOneDestinationsSlots() {
        let limits = DeliveryLimits(concurrency: 32, perDestination: 4)
        let slots = (8001...8008).compactMap { limits.start("http://10.0.0.7:\($0)") }
        #expect(slots.count == 4)
        #expect(limits.available == 28)
        #expect(limits.busyDestinations.isSuperset(of: (8001...8008).map { "http://10.0.0.7:\($0)" }))
        #expect(limits.start("http://10.0.0.8:8001") != nil)
    }

    @Test func namesCountAsTheAddressTheyReached() throws {
        let limits = DeliveryLimits(concurrency: 32, perDestination: 2)
        let first = try #require(limits.start("http://a.tarpit.example"))
        limits.finish(first, outcome: .answered(address: "10.0.0.7"))
        // Another name, same address: once learned, both count against 10.0.0.7.
        let second = try #require(limits.start("http://b.tarpit.example"))
        limits.finish(second, outcome: .answered(address: "10.0.0.7"))
        #expect(limits.start("http://a.tarpit.example") != nil)
        #expect(limits.start("http://b.tarpit.example") != nil)
        #expect(limits.start("http://10.0.0.7:443") == nil)
    }

    @Test func aDestinationThatTimesOutDropsToOneSlotAndRecoversOnAnAnswer() throws {
        let limits = DeliveryLimits(concurrency: 32, perDestination: 4)
        let slots = (0..<4).compactMap { _ in limits.start("http://10.0.0.7:1") }
        #expect(slots.count == 4)
        for slot in slots { limits.finish(slot, outcome: .timedOut(address: "10.0.0.7")) }
        #expect(limits.isSlow("http://10.0.0.7:2"))
        let one = try #require(limits.start("http://10.0.0.7:2"))
        #expect(limits.start("http://10.0.0.7:3") == nil)
        #expect(limits.busyDestinations.contains("http://10.0.0.7:3"))
        limits.finish(one, outcome: .answered(address: "10.0.0.7"))
        #expect(!limits.isSlow("http://10.0.0.7:2"))
        #expect((0..<4).compactMap { _ in limits.start("http://10.0.0.7:1") }.count == 4)
    }

    @Test func slowDestinationsTogetherHoldAtMostAQuarterOfTheSlots() {
        let limits = DeliveryLimits(concurrency: 32, perDestination: 4)
        // Forty tarpit addresses, each found slow once.
        for host in 1...40 {
            if let slot = limits.start("http://10.0.1.\(host)") { limits.finish(slot, outcome: .timedOut(address: "10.0.1.\(host)")) }
        }
        let held = (1...40).compactMap { limits.start("http://10.0.1.\($0)") }
        #expect(held.count == limits.slowShare)
        #expect(limits.slowShare == 8)
        // Everyone else still has the other 24 slots.
        #expect((1...24).compactMap { limits.start("http://10.0.2.\($0)") }.count == 24)
        #expect(limits.available == 0)
    }
}
