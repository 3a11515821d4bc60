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

    @Test func aChangeWhileWaitingWakesTheWaiterBeforeTheTimeout() async throws {
        let waits = ConnectionStateWaits()
        let id = UUID()
        let watch = waits.watch(id, tenant: alice)
        defer { waits.stop(watch) }
        let started = ContinuousClock.now
        async let woken = watch.next(timeout: .seconds(10))
        try await Task.sleep(for: .milliseconds(50))
        waits.changed(record(id, .accepted), tenant: alice)
        let got = await woken
        #expect(got?.state == .accepted)
        #expect(ContinuousClock.now - started < .seconds(5))
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

    @Test func cancellationEndsTheWait() async {
        let waits = ConnectionStateWaits()
        let watch = waits.watch(UUID(), tenant: alice)
        defer { waits.stop(watch) }
        let task = Task { await watch.next(timeout: .seconds(30)) }
        try? await Task.sleep(for: .milliseconds(20))
        let started = ContinuousClock.now
        task.cancel()
        #expect(await task.value == nil)
        #expect(ContinuousClock.now - started < .seconds(5))
    }
}
