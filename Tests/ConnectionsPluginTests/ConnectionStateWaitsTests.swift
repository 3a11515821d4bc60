import AerieCore
import Foundation
import Testing

@testable import ConnectionsPlugin

/// The in-process wake-up of `connections.accept {wait: true}`: a committed state reaches the
/// waiter at once, before or after it starts waiting; without one the wait times out (and the
/// caller polls the store); cancellation ends it.
@Suite(.timeLimit(.minutes(10))) struct ConnectionStateWaitsTests {
    func record(_ id: UUID, _ state: ConnectionRecord.State) -> ConnectionRecord {
        ConnectionRecord(id: id, state: state, invitation: .object([:]), invitationKind: "aries-connections")
    }

    @Test func aChangeWhileWaitingWakesTheWaiterBeforeTheTimeout() async throws {
        let waits = ConnectionStateWaits()
        let id = UUID()
        let watch = waits.watch(id)
        defer { waits.stop(watch) }
        let started = ContinuousClock.now
        async let woken = watch.next(timeout: .seconds(10))
        try await Task.sleep(for: .milliseconds(50))
        waits.changed(record(id, .accepted))
        let got = await woken
        #expect(got?.state == .accepted)
        #expect(ContinuousClock.now - started < .seconds(5))
    }

    @Test func aChangeBeforeWaitingIsKept() async {
        let waits = ConnectionStateWaits()
        let id = UUID()
        let watch = waits.watch(id)
        defer { waits.stop(watch) }
        waits.changed(record(id, .failed))
        let got = await watch.next(timeout: .seconds(10))
        #expect(got?.state == .failed)
    }

    @Test func otherConnectionsAndStoppedWatchesAreNotDelivered() async {
        let waits = ConnectionStateWaits()
        let id = UUID()
        let watch = waits.watch(id)
        waits.changed(record(UUID(), .accepted))
        #expect(await watch.next(timeout: .milliseconds(20)) == nil)
        waits.stop(watch)
        waits.changed(record(id, .accepted))
        #expect(await watch.next(timeout: .milliseconds(20)) == nil)
    }

    @Test func withoutAChangeTheWaitTimesOut() async {
        let waits = ConnectionStateWaits()
        let watch = waits.watch(UUID())
        defer { waits.stop(watch) }
        let started = ContinuousClock.now
        #expect(await watch.next(timeout: .milliseconds(30)) == nil)
        #expect(ContinuousClock.now - started >= .milliseconds(25))
    }

    @Test func cancellationEndsTheWait() async {
        let waits = ConnectionStateWaits()
        let watch = waits.watch(UUID())
        defer { waits.stop(watch) }
        let task = Task { await watch.next(timeout: .seconds(30)) }
        try? await Task.sleep(for: .milliseconds(20))
        let started = ContinuousClock.now
        task.cancel()
        #expect(await task.value == nil)
        #expect(ContinuousClock.now - started < .seconds(5))
    }
}
