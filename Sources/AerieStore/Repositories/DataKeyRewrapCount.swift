/// What `TenantDirectory.rewrapDataKeys` did.
public struct DataKeyRewrapCount: Sendable, Hashable {
    /// Tenants whose data key is now wrapped by the new master key.
    public var rewrapped: Int
    /// Tenants whose data key already was (an interrupted rotation run again).
    public var unchanged: Int
}
