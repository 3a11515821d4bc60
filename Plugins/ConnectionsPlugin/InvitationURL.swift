import AerieCore
import AerieCrypto

/// Invitations carried in URLs: `…?c_i=` (RFC 0160), `…?oob=` (RFC 0434) and `…?d_m=`
/// (connectionless message), each base64 or base64url, padded or not, percent-encoded or not.
public enum InvitationURL {
    /// The query parameters that carry an invitation, in the order they are looked for.
    public static let parameterNames = ["oob", "c_i", "d_m"]

    /// The invitation JSON in `url`'s invitation parameter (looked for in the query, then in a
    /// `?…` part of the fragment, as single-page apps write them), or nil when there is none.
    /// Needs no network: short URLs are the caller's business.
    public static func embeddedInvitation(in url: String, field: String = "url") throws -> JSONValue? {
        guard url.utf8.count <= InvitationLimits.maxURLBytes else {
            throw invalid("the URL is longer than \(InvitationLimits.maxURLBytes / 1024) KiB", field: field)
        }
        guard let (name, value) = invitationParameter(in: url) else { return nil }
        return try decodePayload(value, parameter: name, field: field)
    }

    /// Whether `url` carries one of the invitation parameters.
    public static func hasInvitationParameter(_ url: String) -> Bool {
        invitationParameter(in: url) != nil
    }

    /// The first invitation parameter of `url` and its raw (still percent-encoded) value.
    /// The delimiters are ASCII, so the URL is split on its UTF-8 bytes: splitting its
    /// characters ran grapheme breaking over the whole (base64) payload.
    static func invitationParameter(in url: String) -> (name: String, value: Substring)? {
        let whole = url[...]
        let hash = whole.utf8.firstIndex(of: UInt8(ascii: "#"))
        var items = queryItems(whole[..<(hash ?? whole.endIndex)])
        if let hash { items += queryItems(whole[whole.utf8.index(after: hash)...]) }
        for name in parameterNames {
            if let item = items.first(where: { $0.name == name }) { return item }
        }
        return nil
    }

    private static func queryItems(_ text: Substring) -> [(name: String, value: Substring)] {
        let utf8 = text.utf8
        guard let question = utf8.firstIndex(of: UInt8(ascii: "?")) else { return [] }
        var items: [(name: String, value: Substring)] = []
        var start = utf8.index(after: question)
        while start < utf8.endIndex {
            let end = utf8[start...].firstIndex(of: UInt8(ascii: "&")) ?? utf8.endIndex
            // Empty pairs ("&&") are skipped.
            if start < end {
                let pair = text[start..<end]
                let equals = pair.utf8.firstIndex(of: UInt8(ascii: "="))
                if let name = try? percentDecoded(pair[..<(equals ?? pair.endIndex)]) {
                    items.append((String(decoding: name, as: UTF8.self), equals.map { pair[pair.utf8.index(after: $0)...] } ?? ""))
                }
            }
            guard end < utf8.endIndex else { break }
            start = utf8.index(after: end)
        }
        return items
    }

    /// Decodes one parameter value: percent-decoding, then base64 / base64url (either padding),
    /// then JSON. A value that is percent-encoded JSON rather than base64 is read too.
    static func decodePayload(_ raw: Substring, parameter: String, field: String) throws -> JSONValue {
        guard let text = try? percentDecoded(raw) else {
            throw invalid("the \(parameter) parameter has bad percent-encoding", field: field)
        }
        let json: [UInt8]
        if text.first(where: { !isJSONWhitespace($0) }) == UInt8(ascii: "{") {
            json = text
        } else {
            // Form decoding may have turned base64's '+' into spaces; line breaks come from mail.
            let base64 = text.compactMap { byte -> UInt8? in
                switch byte {
                case UInt8(ascii: " "): UInt8(ascii: "+")
                case 0x0A, 0x0D, 0x09: nil
                default: byte
                }
            }
            guard !base64.isEmpty else { throw invalid("the \(parameter) parameter is empty", field: field) }
            do {
                json = try base64.withUnsafeBytes { try Base64.decode(utf8: $0) }
            } catch {
                throw invalid("the \(parameter) parameter is not valid base64", field: field)
            }
        }
        guard json.count <= InvitationLimits.maxInvitationBytes else {
            throw invalid(
                "the invitation is larger than \(InvitationLimits.maxInvitationBytes / 1024) KiB", field: field)
        }
        do {
            return try JSONValue(parsing: json)
        } catch {
            throw AerieError(
                .invalidInvitation, "the \(parameter) parameter does not hold JSON", field: field,
                details: "\(error)")
        }
    }

    /// Strict percent-decoding ('+' is kept: it is a base64 character here).
    static func percentDecoded(_ text: Substring) throws -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(text.utf8.count)
        var bytes = text.utf8.makeIterator()
        while let byte = bytes.next() {
            guard byte == UInt8(ascii: "%") else {
                out.append(byte)
                continue
            }
            guard let high = bytes.next().flatMap(hexValue), let low = bytes.next().flatMap(hexValue) else {
                throw invalid("bad percent-encoding")
            }
            out.append(high << 4 | low)
        }
        return out
    }

    private static func isJSONWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
