import Foundation

/// What a tenant lets strangers do with an invitation of its own: answer at most `maxUses`
/// Requests, none after `expiresAt`. The `maxUses` and `expiresAt` parameters of both
/// `createInvitation` methods; the connections plugin keeps and enforces them.
public struct InvitationUseLimits: Sendable, Hashable {
    public static let maxUsesRange = 1...1_000_000

    public var maxUses: Int?
    public var expiresAt: Date?

    public init(maxUses: Int? = nil, expiresAt: Date? = nil) {
        self.maxUses = maxUses
        self.expiresAt = expiresAt
    }

    /// From the parameters: `maxUses` in `maxUsesRange`, `expiresAt` an ISO 8601 time
    /// (`2026-12-01T12:00:00Z`, fractional seconds and offsets allowed) after `now`.
    public init(maxUses: Int?, expiresAt text: String?, now: Date = Date()) throws {
        if let maxUses, !Self.maxUsesRange.contains(maxUses) {
            throw AerieError.invalidParams("maxUses must be \(Self.maxUsesRange.lowerBound)...\(Self.maxUsesRange.upperBound)", field: "maxUses")
        }
        var expiresAt: Date?
        if let text {
            guard let parsed = Self.parseTime(text) else {
                throw AerieError.invalidParams("expiresAt must be an ISO 8601 time such as 2026-12-01T12:00:00Z", field: "expiresAt")
            }
            guard parsed > now else { throw AerieError.invalidParams("expiresAt must be in the future", field: "expiresAt") }
            expiresAt = parsed
        }
        self.init(maxUses: maxUses, expiresAt: expiresAt)
    }

    public var isEmpty: Bool { maxUses == nil && expiresAt == nil }

    public static let documentation = [
        ParamDoc("maxUses", "integer", required: false, "Requests answered at most (1...1000000; later ones are refused)"),
        ParamDoc("expiresAt", "string", required: false, "ISO 8601 time after which Requests are refused"),
    ]

    static func parseTime(_ text: String) -> Date? {
        guard text.utf8.count <= 64 else { return nil }
        return (try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(text))
            ?? (try? Date.ISO8601FormatStyle().parse(text))
    }
}
