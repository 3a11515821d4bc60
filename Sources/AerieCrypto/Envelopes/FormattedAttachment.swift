import AerieCore

/// The document a DIDComm v1 message attaches under a `~attach` list and names in its
/// `formats` (issue-credential 2.0, present-proof 2.0): a `json` object or base64 JSON.
/// Counts and sizes are bounded before anything is decoded; a refusal is an `AerieError` whose
/// `problemCode` (`malformed-message`, `unsupported-format`: `ExchangeProtocol`) the protocol reports to the peer.
package enum FormattedAttachment {
    /// Largest attached document, decoded.
    package static let maxBytes = 64 * 1024
    /// Most formats and attachments one message may list.
    package static let maxCount = 8

    /// The document attached under `list` whose `formats` entry is `format`.
    package static func document(of message: JSONValue, list: String, format: String) throws -> JSONValue {
        guard case .array(let formats)? = message["formats"], !formats.isEmpty, formats.count <= maxCount else {
            throw ExchangeProtocol.malformed("formats must list 1 to \(maxCount) attachment formats", field: "formats")
        }
        guard case .array(let attachments)? = message[list], !attachments.isEmpty, attachments.count <= maxCount else {
            throw ExchangeProtocol.malformed("\(list) must hold 1 to \(maxCount) attachments", field: list)
        }
        guard let entry = formats.first(where: { $0["format"]?.stringValue == format }),
            let attachId = entry["attach_id"]?.stringValue
        else {
            let named = formats.compactMap { $0["format"]?.stringValue?.prefix(64) }.joined(separator: ", ")
            throw ExchangeProtocol.unsupportedFormat("no \(format) attachment (the message offers: \(named))")
        }
        guard let attachment = attachments.first(where: { $0["@id"]?.stringValue == attachId }) else {
            throw ExchangeProtocol.malformed("formats names attachment \(attachId.prefix(64)), which \(list) lacks", field: list)
        }
        let data = attachment["data"]
        if let json = data?["json"] {
            guard case .object = json, json.serialized().count <= maxBytes else {
                throw ExchangeProtocol.malformed("\(list) data.json must be an object of at most \(maxBytes / 1024) KiB", field: list)
            }
            return json
        }
        guard let base64 = data?["base64"]?.stringValue else {
            throw ExchangeProtocol.malformed("\(list) must carry data.json or data.base64", field: list)
        }
        guard base64.utf8.count <= maxBytes * 4 / 3 + 4 else {
            throw ExchangeProtocol.malformed("\(list) is larger than \(maxBytes / 1024) KiB", field: list)
        }
        let bytes: [UInt8]
        do { bytes = try Base64.decode(base64) } catch {
            throw ExchangeProtocol.malformed("\(list) data.base64 is not base64", field: list)
        }
        let value: JSONValue
        do { value = try JSONValue(parsing: bytes) } catch {
            throw ExchangeProtocol.malformed("\(list) data.base64 is not JSON", field: list)
        }
        guard case .object = value else { throw ExchangeProtocol.malformed("\(list) must hold a JSON object", field: list) }
        return value
    }
}
