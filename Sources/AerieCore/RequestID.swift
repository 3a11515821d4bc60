/// A short random id carried in the `request` log metadata of everything one JSON-RPC call or
/// one inbound DIDComm message logs, so an operator can pick that request's lines out of the rest.
public enum RequestID {
    /// 16 hex digits (64 random bits): unique enough to grep for, short enough to read.
    public static func make() -> String {
        let value = String(UInt64.random(in: .min ... .max), radix: 16)
        return String(repeating: "0", count: 16 - value.count) + value
    }
}
