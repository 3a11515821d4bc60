/// `TenantDirectory.create` refused a data key wrapped by one master key while the database's
/// tenants use another: the server's master key is out of date (a rotation happened).
public struct MasterKeyMismatch: Error, Sendable, CustomStringConvertible {
    /// The fingerprint the new tenant's key was wrapped with.
    public let offered: String
    /// A fingerprint the existing tenants use.
    public let inUse: String

    public var description: String {
        "the database's tenants use master key \(inUse), not \(offered) (was the master key rotated?)"
    }
}
