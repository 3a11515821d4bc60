import AerieCore
import Foundation

/// The opaque paging cursor of `messages.downloadPage`: the last position returned.
enum MailboxCursor {
    static func encode(_ position: MailboxPosition) -> String {
        let raw = "\(position.receivedAtMicros):\(position.uid.lowercasedString)"
        return Data(raw.utf8).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    static func decode(_ cursor: String) throws -> MailboxPosition {
        var base64 = cursor.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        guard cursor.utf8.count <= 128, let data = Data(base64Encoded: base64),
            let raw = String(data: data, encoding: .utf8)
        else { throw invalid }
        let parts = raw.split(separator: ":")
        guard parts.count == 2, let micros = Int64(parts[0]), let uid = UUID(text: String(parts[1])) else {
            throw invalid
        }
        return MailboxPosition(receivedAtMicros: micros, uid: uid)
    }

    private static var invalid: AerieError {
        AerieError.invalidParams("cursor is not a cursor this method returned", field: "cursor")
    }
}
