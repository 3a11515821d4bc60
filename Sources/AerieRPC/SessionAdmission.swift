import AerieCore

/// Who holds the authenticated sessions, and whether one more may authenticate as a credential.
///
/// Tenant and backend sessions share `maxSessions`, and one credential (one tenant, one backend)
/// holds at most `maxPerCredential` of them, so a single token cannot take every place. Admin
/// sessions have a lane of their own, bounded by `maxAdmin` and never counted in `maxSessions`:
/// the operator can always authenticate to suspend whoever fills the server.
struct SessionAdmission {
    enum Refusal: Equatable, Sendable {
        case serverFull
        case credentialFull
        case adminFull

        var error: AerieError {
            switch self {
            case .serverFull: AerieError(.busy, "too many sessions; try again later")
            case .credentialFull: AerieError(.busy, "too many sessions for this credential; close one or try again later")
            case .adminFull: AerieError(.busy, "too many admin sessions; try again later")
            }
        }
    }

    let maxSessions: Int
    let maxPerCredential: Int
    let maxAdmin: Int
    /// The credential each authenticated session was admitted as.
    private(set) var held: [UInt64: SessionCredential.Kind] = [:]
    private var perCredential: [SessionCredential.Kind: Int] = [:]
    /// Tenant and backend sessions (the ones `maxSessions` counts).
    private(set) var sharedCount = 0

    init(maxSessions: Int, maxPerCredential: Int, maxAdmin: Int) {
        self.maxSessions = max(1, maxSessions)
        self.maxPerCredential = max(1, maxPerCredential)
        self.maxAdmin = max(1, maxAdmin)
    }

    var adminCount: Int { perCredential[.admin, default: 0] }

    /// Admits `session` as `kind` (moving its place when it authenticated before as another
    /// credential), or says why not; a refused session keeps the place it had.
    mutating func admit(_ session: UInt64, as kind: SessionCredential.Kind) -> Refusal? {
        let current = held[session]
        if current == kind { return nil }
        if kind == .admin {
            guard adminCount < maxAdmin else { return .adminFull }
        } else {
            let sharedWithout = sharedCount - (current.map { $0 == .admin ? 0 : 1 } ?? 0)
            guard sharedWithout < maxSessions else { return .serverFull }
            guard perCredential[kind, default: 0] < maxPerCredential else { return .credentialFull }
        }
        release(session)
        held[session] = kind
        perCredential[kind, default: 0] += 1
        if kind != .admin { sharedCount += 1 }
        return nil
    }

    /// The session closed (or never authenticated): its place is free.
    mutating func release(_ session: UInt64) {
        guard let kind = held.removeValue(forKey: session) else { return }
        let left = perCredential[kind, default: 1] - 1
        perCredential[kind] = left > 0 ? left : nil
        if kind != .admin { sharedCount -= 1 }
    }
}
