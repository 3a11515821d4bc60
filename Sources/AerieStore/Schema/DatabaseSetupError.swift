/// A problem that stops the server from starting: the embedded cluster, migrations or the
/// database roles. The message says what to fix; it is for operators, never sent to clients.
public struct DatabaseSetupError: Error, Sendable, CustomStringConvertible {
    public var message: String

    public init(_ message: String) { self.message = message }

    public var description: String { message }
}
