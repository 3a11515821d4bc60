import AerieCore
import Foundation
import Testing

@testable import ConnectionsPlugin

/// The in-process wake-up of `connections.accept {wait: true}`: a committed state reaches the
/// waiter at once, before or after it starts waiting; without one the wait times out (and the
/// caller polls the store); cancellation ends it.
@Suite(.timeLimit(.minutes(10))) struct ConnectionStateWaitsTests {
    let alice = TenantID(uuid: UUID())
    let bob = TenantID(uuid: UUID())

    func record(_ id: UUID, _ state: ConnectionRecord.State) -> ConnectionRecord {
        ConnectionRecord(id: id, state: state, invitation: .object([:]), invitationKind: "aries-connections")
    }

    /// Returns once `count` waits are parked (a wait puts its timeout on the timer after its
    /// continuation), so what the test does next happens while they wait, not before.
    func parked(_ waits: ConnectionStateWaits, _ count: Int = 1, sourceLocation: SourceLocation = #_sourceLocation)
        async throws
    {
        let deadline = ContinuousClock.now + .seconds(60)
        while waits.timeouts.count < count {
            guard ContinuousClock.now < deadline else {
                Issue.record("\(count) waits not parked within 60 s", sourceLocation: sourceLocation)
                return
            }
            try await Task.sleep(for: .milliseconds(1))
        }
    }

    @Test func aChangeWhileWaitingWakesTheWaiterBeforeTheTimeout() async throws {
        let waits = ConnectionStateWaits()
        let id = UUID()
        let watch = waits.watch(id, tenant: alice)
        defer { waits.stop(watch) }
        // A timeout answers nil, so the record itself shows the wake (no clock: a loaded machine
        // can take seconds to run the waiter at all); a lost wake runs into the suite's limit.
        async let woken = watch.next(timeout: .seconds(3600))
        try await parked(waits)
        waits.changed(record(id, .accepted), tenant: alice)
        let got = await woken
        #expect(got?.state == .accepted)
    }

    @Test func aChangeBeforeWaitingIsKept() async {
        let waits = ConnectionStateWaits()
        let id = UUID()
        let watch = waits.watch(id, tenant: alice)
        defer { waits.stop(watch) }
        waits.changed(record(id, .failed), tenant: alice)
        let got = await watch.next(timeout: .seconds(10))
        #expect(got?.state == .failed)
    }

    @Test func otherConnectionsAndStoppedWatchesAreNotDelivered() async {
        let waits = ConnectionStateWaits()
        let id = UUID()
        let watch = waits.watch(id, tenant: alice)
        waits.changed(record(UUID(), .accepted), tenant: alice)
        #expect(await watch.next(timeout: .milliseconds(20)) == nil)
        waits.stop(watch)
        waits.changed(record(id, .accepted), tenant: alice)
        #expect(await watch.next(timeout: .milliseconds(20)) == nil)
    }

    /// Connection ids are unique, but a commit of one tenant never wakes another tenant's wait.
    @Test func anotherTenantsChangeIsNotDelivered() async {
        let waits = ConnectionStateWaits()
        let id = UUID()
        let watch = waits.watch(id, tenant: alice)
        defer { waits.stop(watch) }
        waits.changed(record(id, .accepted), tenant: bob)
        waits.changed(record(id, .failed), tenant: alice)
        #expect(await watch.next(timeout: .seconds(10))?.state == .failed)
    }

    /// Several callers waiting for one connection (a repeated accept) are all woken.
    @Test func everyWatcherOfAConnectionIsWoken() async {
        let waits = ConnectionStateWaits()
        let id = UUID()
        let first = waits.watch(id, tenant: alice)
        let second = waits.watch(id, tenant: alice)
        defer { waits.stop(first); waits.stop(second) }
        waits.changed(record(id, .accepted), tenant: alice)
        #expect(await first.next(timeout: .seconds(10))?.state == .accepted)
        #expect(await second.next(timeout: .seconds(10))?.state == .accepted)
    }

    @Test func withoutAChangeTheWaitTimesOut() async {
        let waits = ConnectionStateWaits()
        let watch = waits.watch(UUID(), tenant: alice)
        defer { waits.stop(watch) }
        let started = ContinuousClock.now
        #expect(await watch.next(timeout: .milliseconds(30)) == nil)
        #expect(ContinuousClock.now - started >= .milliseconds(25))
    }

    @Test func cancellationEndsTheWait() async throws {
        let waits = ConnectionStateWaits()
        let watch = waits.watch(UUID(), tenant: alice)
        defer { waits.stop(watch) }
        // Only the cancellation can end this wait (its timeout is an hour).
        let task = Task { await watch.next(timeout: .seconds(3600)) }
        try await parked(waits)
        task.cancel()
        #expect(await task.value == nil)
    }

    /// Another process's commit, heard through the server's LISTEN, wakes the waiter (with nil:
    /// it reads the store) long before its timeout; heard while nobody waits, it is kept for the
    /// next wait, which may be reading the store from before that commit.
    @Test func aHeardStateWakesTheWaiterToReadTheStore() async throws {
        let waits = ConnectionStateWaits()
        let id = UUID()
        let watch = waits.watch(id, tenant: alice)
        defer { waits.stop(watch) }
        watch.saw(.requested)
        // Only the wake can end these waits (their timeout is an hour; a lost wake runs into the
        // suite's time limit).
        async let woken = watch.next(timeout: .seconds(3600))
        try await parked(waits)
        waits.heard(id, state: "accepted", tenant: alice)
        #expect(await woken == nil)

        waits.heard(id, state: "accepted", tenant: alice)
        #expect(await watch.next(timeout: .seconds(3600)) == nil)
    }

    /// Hearing the state the waiter already has (this process's own commit, heard after
    /// `changed`), or another tenant's, or another connection's, wakes nobody: the next thing the
    /// waiter gets is the next real change.
    @Test func aHeardStateTheWaiterHasOrNotItsOwnWakesNobody() async {
        let waits = ConnectionStateWaits()
        let id = UUID()
        let watch = waits.watch(id, tenant: alice)
        defer { waits.stop(watch) }
        watch.saw(.requested)
        waits.heard(id, state: "requested", tenant: alice)
        waits.heard(id, state: "accepted", tenant: bob)
        waits.heard(UUID(), state: "accepted", tenant: alice)
        waits.changed(record(id, .failed), tenant: alice)
        #expect(await watch.next(timeout: .seconds(3600))?.state == .failed)
    }

    /// The timeouts share one timer: a wait woken by a record, a poke or a cancellation leaves
    /// no entry behind, so the timer ends once nobody waits.
    @Test func aWokenWaitLeavesNoTimeoutBehind() async throws {
        let waits = ConnectionStateWaits()
        let id = UUID()
        let watch = waits.watch(id, tenant: alice)
        defer { waits.stop(watch) }
        async let woken = watch.next(timeout: .seconds(3600))
        try await parked(waits)
        waits.changed(record(id, .accepted), tenant: alice)
        #expect(await woken?.state == .accepted)
        #expect(waits.timeouts.count == 0)

        watch.saw(.accepted)
        async let poked = watch.next(timeout: .seconds(3600))
        try await parked(waits)
        waits.heard(id, state: "failed", tenant: alice)
        #expect(await poked == nil)
        #expect(waits.timeouts.count == 0)

        let task = Task { await watch.next(timeout: .seconds(3600)) }
        try await parked(waits)
        task.cancel()
        #expect(await task.value == nil)
        #expect(waits.timeouts.count == 0)
    }

    /// Waits with different timeouts at once, a short one started while the timer sleeps for a
    /// long one: each times out (none sooner than its timeout), and the short one is not held
    /// back until the long one's deadline.
    @Test func waitsWithDifferentTimeoutsEachTimeOut() async throws {
        let waits = ConnectionStateWaits()
        let long = waits.watch(UUID(), tenant: alice)
        let short = waits.watch(UUID(), tenant: bob)
        defer { waits.stop(long); waits.stop(short) }
        let longTask = Task { await long.next(timeout: .seconds(3600)) }
        try await parked(waits)
        let started = ContinuousClock.now
        #expect(await short.next(timeout: .milliseconds(40)) == nil)
        #expect(ContinuousClock.now - started >= .milliseconds(35))
        #expect(waits.timeouts.count == 1)
        // Many at once, one timer: all come back.
        let many = (0..<50).map { _ in waits.watch(UUID(), tenant: alice) }
        await withTaskGroup(of: ConnectionRecord?.self) { group in
            for (index, watch) in many.enumerated() {
                group.addTask { await watch.next(timeout: .milliseconds(10 + index)) }
            }
            for await result in group { #expect(result == nil) }
        }
        many.forEach(waits.stop)
        longTask.cancel()
        #expect(await longTask.value == nil)
        #expect(waits.timeouts.count == 0)
    }
}
