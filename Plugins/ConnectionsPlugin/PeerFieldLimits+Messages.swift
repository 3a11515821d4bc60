import AerieCore

extension PeerFieldLimits {
    /// Throws `invalid_params` (the handlers refuse the message with it) when `value`, the field
    /// `name` of a peer's Request or Response, is over this limit.
    func require(_ value: String, name: String) throws {
        if let violation = violation(value, name: name) { throw AerieError.invalidParams(violation, field: "message") }
    }
}
