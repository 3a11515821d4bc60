import AerieCore
import Foundation

/// What a backend may send with `messages.send`, checked before anything is read or packed: a JSON
/// object of bounded size whose `@type` is a DIDComm v1 message type URI and whose `@id` (filled
/// in when missing) is a bounded string.
public enum OutgoingMessage {
    /// The serialized message at most (the envelope grows it by about a third per layer).
    public static let maxBytes = 64 * 1024
    public static let maxTypeLength = 256
    public static let maxIdLength = 128
    /// `basicmessage/1.0` content at most (UTF-8 bytes).
    public static let maxTextBytes = 32 * 1024
    public static let basicMessageType = InboundMessage.didcommPrefix + "basicmessage/1.0/message"
    /// Routing is Aerie's own business: a backend does not send forwards.
    static let refusedTypes: Set<String> = [InboundMessage.didcommPrefix + "routing/1.0/forward"]

    /// The message as it will be sent (`@id` filled in), or `invalid_params` naming the field.
    public static func validated(_ message: JSONValue, makeId: () -> String = { UUID.random().lowercasedString }) throws -> JSONValue {
        guard case .object(var fields) = message else {
            throw AerieError.invalidParams("message must be a JSON object", field: "message")
        }
        guard message.serialized().count <= maxBytes else {
            throw AerieError.invalidParams("message is larger than \(maxBytes) bytes", field: "message")
        }
        guard let type = fields["@type"]?.stringValue else {
            throw AerieError.invalidParams("message.@type must be a message type URI", field: "message.@type")
        }
        guard isMessageType(type) else {
            throw AerieError.invalidParams(
                "message.@type must be a DIDComm message type URI (<doc-uri>/<family>/<major.minor>/<name>)", field: "message.@type")
        }
        guard !refusedTypes.contains(InboundMessage.normalizedType(type)) else {
            throw AerieError.invalidParams("message.@type may not be a forward: Aerie wraps messages itself", field: "message.@type")
        }
        switch fields["@id"] {
        case nil, .null?:
            fields["@id"] = .string(makeId())
        case .string(let id)? where isToken(id, maxLength: maxIdLength):
            break
        default:
            throw AerieError.invalidParams(
                "message.@id must be a string of 1 to \(maxIdLength) printable characters", field: "message.@id")
        }
        if let thread = fields["~thread"] {
            guard case .object(let decorator) = thread,
                decorator["thid"].map({ $0.stringValue.map { isToken($0, maxLength: maxIdLength) } ?? false }) ?? true,
                decorator["pthid"].map({ $0.stringValue.map { isToken($0, maxLength: maxIdLength) } ?? false }) ?? true
            else {
                throw AerieError.invalidParams("message.~thread must be an object whose thid and pthid are ids", field: "message.~thread")
            }
        }
        return .object(fields)
    }

    /// A `basicmessage/1.0/message` (RFC 0095) with `content`, `sent_time` (UTC, as ACA-Py writes
    /// it) and `~l10n`.
    public static func basicMessage(content: String, locale: String = "en", at date: Date = Date()) throws -> JSONValue {
        guard !content.isEmpty, content.utf8.count <= maxTextBytes else {
            throw AerieError.invalidParams("content must be 1 to \(maxTextBytes) bytes of text", field: "content")
        }
        return [
            "@type": .string(basicMessageType), "@id": .string(UUID.random().lowercasedString), "content": .string(content),
            "sent_time": .string(sentTime(date)), "~l10n": ["locale": .string(locale)],
        ]
    }

    /// `2019-01-15 18:42:01.123456Z`: RFC 0095's form, which ACA-Py's validator takes. Worked out
    /// from the seconds since 1970 (proleptic Gregorian, UTC; the civil date of a day count as in
    /// Howard Hinnant's `civil_from_days`), with no `Calendar`: building one per message costs about
    /// 2 % of the server's CPU per `messages.sendText`.
    static func sentTime(_ date: Date) -> String {
        let interval = date.timeIntervalSince1970
        let whole = interval.rounded(.down)
        let micros = Int((interval - whole) * 1_000_000)
        let seconds = Int(whole)
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let secondOfDay = seconds - days * 86_400
        // Days since 0000-03-01, in 400-year eras of 146,097 days each.
        let shifted = days + 719_468
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthFromMarch = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthFromMarch + 2) / 5 + 1
        let month = monthFromMarch < 10 ? monthFromMarch + 3 : monthFromMarch - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        var text: [UInt8] = []
        text.reserveCapacity(27)
        func digits(_ value: Int, _ width: Int) {
            var divisor = 1
            for _ in 1..<width { divisor *= 10 }
            var rest = max(0, value)
            for _ in 0..<width {
                text.append(UInt8(ascii: "0") + UInt8(rest / divisor % 10))
                rest %= divisor
                divisor /= 10
            }
        }
        digits(year, 4)
        text.append(UInt8(ascii: "-"))
        digits(month, 2)
        text.append(UInt8(ascii: "-"))
        digits(day, 2)
        text.append(UInt8(ascii: " "))
        digits(secondOfDay / 3600, 2)
        text.append(UInt8(ascii: ":"))
        digits(secondOfDay / 60 % 60, 2)
        text.append(UInt8(ascii: ":"))
        digits(secondOfDay % 60, 2)
        text.append(UInt8(ascii: "."))
        digits(micros, 6)
        text.append(UInt8(ascii: "Z"))
        return String(decoding: text, as: UTF8.self)
    }

    /// `<doc-uri>/<family>/<major>.<minor>/<name>` (RFC 0003), with an `https://` or `http://`
    /// document URI or the legacy `did:sov:...;spec/` prefix.
    public static func isMessageType(_ type: String) -> Bool {
        guard type.utf8.count <= maxTypeLength, type.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F }) else {
            return false
        }
        let normalized = InboundMessage.normalizedType(type)
        guard normalized.hasPrefix("https://") || normalized.hasPrefix("http://") else { return false }
        let parts = normalized.split(separator: "/", omittingEmptySubsequences: false)
        // scheme, "", host, ..., family, version, name
        guard parts.count >= 6, !parts[2].isEmpty else { return false }
        let (family, version, name) = (parts[parts.count - 3], parts[parts.count - 2], parts[parts.count - 1])
        let nameCharacters = CharacterSet.alphanumerics.union(CharacterSet(charactersIn: "-_."))
        let isName = { (s: Substring) in !s.isEmpty && s.unicodeScalars.allSatisfy { nameCharacters.contains($0) } }
        let numbers = version.split(separator: ".", omittingEmptySubsequences: false)
        return isName(family) && isName(name) && numbers.count == 2
            && numbers.allSatisfy { !$0.isEmpty && $0.count <= 4 && $0.allSatisfy(\.isASCII) && $0.allSatisfy(\.isNumber) }
    }

    /// 1...maxLength printable characters (no control characters).
    static func isToken(_ text: String, maxLength: Int) -> Bool {
        !text.isEmpty && text.count <= maxLength && !text.unicodeScalars.contains { $0.properties.generalCategory == .control }
    }
}
