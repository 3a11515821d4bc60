import AerieCore
import AerieCrypto

/// The request attached to an out-of-band invitation (`requests~attach`, or the seeds'
/// `request~attach`): the first attachment, decoded from `data.json` (an object, or JSON text as
/// the seeds show) or `data.base64`. Anything else is a clear `invalid_invitation`.
public enum AttachedMessage {
    /// Attached messages larger than this are refused (the invitation itself is bounded too).
    public static let maxBytes = 64 * 1024

    /// The decoded message of the first attachment, or nil when there is none.
    public static func extract(from invitation: Invitation) throws -> JSONValue? {
        guard let first = invitation.attachments.first else { return nil }
        let field = invitation.json["requests~attach"] != nil ? "requests~attach[0]" : "request~attach[0]"
        return try decode(first, field: field)
    }

    static func decode(_ attachment: JSONValue, field: String) throws -> JSONValue {
        guard let data = attachment["data"], case .object = data else {
            throw invalid("\(field) has no data object", field: "\(field).data")
        }
        let message: JSONValue
        if let json = data["json"] {
            switch json {
            case .object: message = json
            case .string(let text): message = try parse(text, field: "\(field).data.json")
            default: throw invalid("\(field).data.json must be a JSON object or JSON text", field: "\(field).data.json")
            }
        } else if let base64 = data["base64"] {
            guard case .string(let text) = base64, text.utf8.count <= maxBytes * 4 / 3 + 4 else {
                throw invalid("\(field).data.base64 must be a base64 string", field: "\(field).data.base64")
            }
            let bytes: [UInt8]
            do {
                bytes = try Base64.decode(text)
            } catch {
                throw invalid("\(field).data.base64 is not valid base64", field: "\(field).data.base64")
            }
            guard let utf8 = String(validating: bytes, as: UTF8.self) else {
                throw invalid("\(field).data.base64 does not hold UTF-8 JSON", field: "\(field).data.base64")
            }
            message = try parse(utf8, field: "\(field).data.base64")
        } else if data["links"] != nil {
            throw AerieError(
                .unsupportedInvitation, "\(field) is attached by link; only json and base64 attachments are read",
                field: "\(field).data.links")
        } else {
            throw invalid("\(field).data has neither json nor base64", field: "\(field).data")
        }
        guard case .object = message else {
            throw invalid("the message attached in \(field) must be a JSON object", field: field)
        }
        guard let type = message["@type"]?.stringValue, !type.isEmpty, PeerFieldLimits.url.violation(type, name: "") == nil else {
            throw invalid("the message attached in \(field) has no @type", field: field)
        }
        guard let id = message["@id"]?.stringValue, !id.isEmpty, PeerFieldLimits.id.violation(id, name: "") == nil else {
            throw invalid("the message attached in \(field) has no @id", field: field)
        }
        if let thid = message["~thread"]?["thid"]?.stringValue,
            let violation = PeerFieldLimits.id.violation(thid, name: "the ~thread.thid of the message attached in \(field)")
        {
            throw invalid(violation, field: field)
        }
        guard message.serialized().count <= maxBytes else {
            throw invalid("the message attached in \(field) is larger than \(maxBytes / 1024) KiB", field: field)
        }
        return message
    }

    private static func parse(_ text: String, field: String) throws -> JSONValue {
        guard text.utf8.count <= maxBytes else {
            throw invalid("\(field) is larger than \(maxBytes / 1024) KiB", field: field)
        }
        do {
            return try JSONValue(parsing: text)
        } catch {
            throw invalid("\(field) is not valid JSON", field: field)
        }
    }

    private static func invalid(_ message: String, field: String) -> AerieError {
        AerieError(.invalidInvitation, message, field: field)
    }
}
