import AerieCore

/// The document a DIDComm v1 message attaches under a `~attach` list and names in its
/// `formats` (issue-credential 2.0, present-proof 2.0): a `json` object or base64 JSON.
/// Counts and sizes are bounded before anything is decoded; a refusal is an `AerieError` whose
/// `problemCode` (`malformed-message`, `unsupported-format`) the protocol reports to the peer.
package enum FormattedAttachment {
    /// Largest attached document, decoded.
    package static let maxBytes = 64 * 1024
    /// Most formats and attachments one message may list.
    package static let maxCount = 8

    /// The document attached under `list` whose `formats` entry is `format`.
    package static func document(of message: JSONValue, list: String, format: String) throws -> JSONValue {
        guard case .array(let formats)? = message["formats"], !formats.isEmpty, formats.count <= maxCount else {
            throw malformed("formats must list 1 to \(maxCount) attachment formats", field: "formats")
        }
        guard case .array(let attachments)? = message[list], !attachments.isEmpty, attachments.count <= maxCount else {
            throw malformed("\(list) must hold 1 to \(maxCount) attachments", field: list)
        }
        guard let entry = formats.first(where: { $0["format"]?.stringValue == format }),
            let attachId = entry["attach_id"]?.stringValue
        else {
            let named = formats.compactMap { $0["format"]?.stringValue?.prefix(64) }.joined(separator: ", ")
            throw AerieError(
                .invalidParams, "no \(format) attachment (the message offers: \(named))", field: "formats",
                data: ["problemCode": "unsupported-format"])
        }
        guard let attachment = attachments.first(where: { $0["@id"]?.stringValue == attachId }) else {
            throw malformed("formats names attachment \(attachId.prefix(64)), which \(list) lacks", field: list)
        }
        let data = attachment["data"]
        if let json = data?["json"] {
            guard case .object = json, json.serialized().count <= maxBytes else {
                throw malformed("\(list) data.json must be an object of at most \(maxBytes / 1024) KiB", field: list)
            }
            return json
        }
        guard let base64 = data?["base64"]?.stringValue else {
            throw malformed("\(list) must carry data.json or data.base64", field: list)
        }
        guard base64.utf8.count <= maxBytes * 4 / 3 + 4 else {
            throw malformed("\(list) is larger than \(maxBytes / 1024) KiB", field: list)
        }
        let bytes: [UInt8]
        do { bytes = try Base64.decode(base64) } catch {
            throw malformed("\(list) data.base64 is not base64", field: list)
        }
        let value: JSONValue
        do { value = try JSONValue(parsing: bytes) } catch {
            throw malformed("\(list) data.base64 is not JSON", field: list)
        }
        guard case .object = value else { throw malformed("\(list) must hold a JSON object", field: list) }
        return value
    }

    private static func malformed(_ message: String, field: String) -> AerieError {
        AerieError(.invalidParams, message, field: field, data: ["problemCode": "malformed-message"])
    }
}
