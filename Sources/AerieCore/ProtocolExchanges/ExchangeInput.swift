import Foundation

/// What the exchange protocols' methods read alike from a tenant's params: ids, a state to list,
/// a page's size and cursor, a reason told to the peer; and how a page is answered.
package enum ExchangeInput {
    package static func uuid(_ text: String, field: String) throws -> UUID {
        guard let id = UUID(text: text) else { throw AerieError.invalidParams("\(field) must be an id (UUID)", field: field) }
        return id
    }

    /// A page's size: 1...500, 100 when not given.
    package static func pageLimit(_ limit: Int?) throws -> Int {
        guard let limit else { return 100 }
        guard (1...500).contains(limit) else { throw AerieError.invalidParams("limit must be 1...500", field: "limit") }
        return limit
    }

    /// One of `State`'s names, when given.
    package static func state<State: RawRepresentable & CaseIterable>(_ text: String?, _: State.Type) throws -> State?
    where State.RawValue == String {
        try text.map { text in
            guard let state = State(rawValue: text) else {
                throw AerieError.invalidParams(
                    "state must be one of \(State.allCases.map(\.rawValue).joined(separator: ", "))", field: "state")
            }
            return state
        }
    }

    /// The reason of a decline, told to the peer: at most `PeerFieldLimits.text`.
    package static func reason(_ reason: String?) throws -> String? {
        guard let reason else { return nil }
        if let violation = PeerFieldLimits.text.violation(reason, name: "reason") { throw AerieError.invalidParams(violation, field: "reason") }
        return reason
    }

    /// `{<key>: views, nextCursor}`: the cursor is the last id when the page is full.
    package static func page(_ key: String, _ views: [JSONValue], lastId: UUID?, limit: Int) -> JSONValue {
        [key: .array(views), "nextCursor": views.count == limit ? .optional(lastId?.lowercasedString) : .null]
    }
}
