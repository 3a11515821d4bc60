import CLibPQ
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension PostgresConnection {
    /// Waits up to `timeoutMilliseconds` (-1: without end) for the socket to be readable or for
    /// `wakeDescriptor` (when not -1) to be, then returns the payloads of the notifications that
    /// arrived (possibly none). Throws when the connection is lost.
    func waitForNotifications(timeoutMilliseconds: Int32, wakeDescriptor: Int32 = -1) throws
        -> [(channel: String, payload: String)]
    {
        let handle = try liveHandle()
        let socket = PQsocket(handle)
        guard socket >= 0 else { throw lost(handle) }
        var descriptors = [
            pollfd(fd: socket, events: Int16(POLLIN), revents: 0),
            pollfd(fd: wakeDescriptor, events: Int16(POLLIN), revents: 0),
        ]
        let ready = poll(&descriptors, wakeDescriptor >= 0 ? 2 : 1, timeoutMilliseconds)
        if ready < 0 && errno != EINTR { throw lost(handle) }
        let socketReady = ready > 0 && descriptors[0].revents != 0
        if socketReady {
            guard PQconsumeInput(handle) == 1 else { throw lost(handle) }
        }
        var received: [(channel: String, payload: String)] = []
        while let notice = PQnotifies(handle) {
            received.append((String(cString: notice.pointee.relname), String(cString: notice.pointee.extra)))
            PQfreemem(notice)
        }
        if PQstatus(handle) == CONNECTION_BAD { throw lost(handle) }
        return received
    }

    private func lost(_ handle: OpaquePointer) -> PostgresError {
        let message = String(cString: PQerrorMessage(handle)).trimmingCharacters(in: .whitespacesAndNewlines)
        close()
        return PostgresError(sqlState: nil, message: message.isEmpty ? "connection lost" : message, isConnectionFailure: true)
    }
}
