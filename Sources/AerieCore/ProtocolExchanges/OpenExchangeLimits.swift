/// How many exchanges of one protocol (issue-credential, present-proof) may be open, that is not
/// yet `done` or `abandoned`, on one connection and in one tenant
/// (`AERIE_OPEN_EXCHANGES_PER_CONNECTION`, `AERIE_OPEN_EXCHANGES_PER_TENANT`). A peer's offer or
/// request past either is refused (`quota_exceeded`, reported to the peer as
/// `too-many-open-exchanges`) and nothing of it is stored; the open ones are never dropped to
/// make room, they end when the tenant answers or declines them.
public struct OpenExchangeLimits: Sendable, Hashable {
    public var perConnection: Int
    public var perTenant: Int

    public init(perConnection: Int, perTenant: Int) {
        self.perConnection = perConnection
        self.perTenant = perTenant
    }

    public static let `default` = OpenExchangeLimits(perConnection: 20, perTenant: 1000)

    /// The problem-report code a peer is told (the protocols' RFCs define none for this).
    public static let problemCode = "too-many-open-exchanges"

    /// Whether `error` is the refusal below (answered to the peer with a problem report).
    public static func isRefusal(_ error: AerieError) -> Bool {
        error.code == .quotaExceeded && error.data["problemCode"] == .string(problemCode)
    }

    /// The refusal of one more open exchange: `scope` is `connection` or `tenant`.
    static func exceeded(_ noun: String, limit: Int, scope: String, variable: String) -> AerieError {
        AerieError(
            .quotaExceeded,
            "this \(scope) already has \(limit) open \(noun)s, the most it may have (\(variable)); one must be answered or declined first",
            data: ["problemCode": .string(problemCode), "limit": .int(Int64(limit)), "scope": .string(scope)])
    }
}
