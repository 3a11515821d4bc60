import AerieCore
import AerieCrypto

/// Reads an invitation from whatever a wallet backend holds: a JSON object, JSON text, an
/// invitation URL (`?c_i=`, `?oob=`, `?d_m=`), a short URL that must be fetched, or bare base64.
///
/// Only short URLs touch the network, through the `URLFetcher` (SSRF-safe in AerieTransport).
/// A short URL may answer with the invitation JSON, or redirect to an invitation URL, which is
/// decoded without being fetched.
public struct InvitationReader: Sendable {
    public let fetcher: any URLFetcher

    public init(fetcher: any URLFetcher) {
        self.fetcher = fetcher
    }

    /// An invitation given as a JSON object or as a string (JSON text, URL or base64).
    public func read(_ invitation: JSONValue) async throws -> Invitation {
        switch invitation {
        case .object:
            return try InvitationParser.parse(invitation)
        case .string(let text):
            let trimmed = Self.trimmed(text)
            if trimmed.hasPrefix("{") { return try InvitationParser.parse(text: String(trimmed)) }
            if trimmed.contains("://") || trimmed.hasPrefix("?") || InvitationURL.hasInvitationParameter(String(trimmed)) {
                return try await read(url: String(trimmed), field: "invitation")
            }
            return try Self.parseBase64(String(trimmed))
        default:
            throw invalid("invitation must be a JSON object or a string", field: "invitation")
        }
    }

    /// An invitation URL, or a short URL to fetch.
    public func read(url: String) async throws -> Invitation {
        try await read(url: String(Self.trimmed(url)), field: "url")
    }

    private func read(url: String, field: String) async throws -> Invitation {
        guard !url.isEmpty else { throw invalid("the URL is empty", field: field) }
        if let json = try InvitationURL.embeddedInvitation(in: url, field: field) {
            return try InvitationParser.parse(json)
        }
        guard Self.isHTTP(url) else {
            throw invalid("the URL has no c_i, oob or d_m parameter, and only http(s) URLs are fetched", field: field)
        }
        let fetched: FetchedURL
        do {
            fetched = try await fetcher.fetch(
                URLFetchRequest(
                    url: url, accept: "application/json",
                    stopAtRedirectsWithQueryItems: Set(InvitationURL.parameterNames)))
        } catch let error as URLFetchError {
            throw Self.aerieError(error, field: field)
        }
        if let location = fetched.redirectLocation {
            guard let json = try InvitationURL.embeddedInvitation(in: location, field: field) else {
                throw invalid("the URL redirects to a URL without an invitation", field: field)
            }
            return try InvitationParser.parse(json)
        }
        guard (200..<300).contains(fetched.status) else {
            throw AerieError(.peerUnreachable, "the URL answered HTTP \(fetched.status)", field: field)
        }
        return try Self.parseBody(fetched.body, field: field)
    }

    /// A short URL's answer: the invitation JSON (or an object wrapping it as `invitation` /
    /// `invitation_url`, as agents' admin APIs answer), or the text of an invitation URL.
    static func parseBody(_ body: [UInt8], field: String) throws -> Invitation {
        let text = String(decoding: body, as: UTF8.self)
        let trimmed = trimmed(text)
        guard !trimmed.isEmpty else { throw invalid("the URL answered with an empty body", field: field) }
        if trimmed.hasPrefix("{") {
            let json: JSONValue
            do {
                json = try JSONValue(parsing: String(trimmed))
            } catch {
                throw AerieError(
                    .invalidInvitation, "the URL did not answer with valid JSON", field: field, details: "\(error)")
            }
            if json["@type"] == nil, json["connReqId"] == nil, json["s"] == nil {
                if case .object? = json["invitation"] { return try InvitationParser.parse(json["invitation"]!) }
                for key in ["invitation_url", "invitationUrl", "url"] {
                    if let url = json[key]?.stringValue, let inner = try InvitationURL.embeddedInvitation(in: url, field: field) {
                        return try InvitationParser.parse(inner)
                    }
                }
            }
            return try InvitationParser.parse(json)
        }
        if let inner = try InvitationURL.embeddedInvitation(in: String(trimmed), field: field) {
            return try InvitationParser.parse(inner)
        }
        throw invalid("the URL did not answer with an invitation", field: field)
    }

    /// Base64 of the JSON, as some QR codes carry it.
    static func parseBase64(_ text: String) throws -> Invitation {
        guard text.utf8.count <= InvitationLimits.maxURLBytes else {
            throw invalid("the invitation is larger than \(InvitationLimits.maxInvitationBytes / 1024) KiB", field: "invitation")
        }
        guard let bytes = try? Base64.decode(text), let json = try? JSONValue(parsing: bytes) else {
            throw invalid("invitation is neither JSON, an invitation URL nor base64 JSON", field: "invitation")
        }
        return try InvitationParser.parse(json)
    }

    /// Fetch failures as the errors DESIGN.md names; messages stay the fetcher's safe ones.
    static func aerieError(_ error: URLFetchError, field: String) -> AerieError {
        let details = String(reflecting: error)
        switch error.code {
        case .timeout: return AerieError(.timeout, error.message, field: field, details: details)
        case .unreachable: return AerieError(.peerUnreachable, error.message, field: field, details: details)
        case .busy: return AerieError(.busy, error.message, field: field, details: details)
        default: return AerieError(.invalidInvitation, error.message, field: field, details: details)
        }
    }

    private static func isHTTP(_ url: String) -> Bool {
        let lower = url.prefix(8).lowercased()
        return lower.hasPrefix("http://") || lower.hasPrefix("https://")
    }

    private static func trimmed(_ text: String) -> Substring {
        let isSpace: (Character) -> Bool = { $0.isWhitespace }
        guard let start = text.firstIndex(where: { !isSpace($0) }) else { return "" }
        let end = text.lastIndex(where: { !isSpace($0) })!
        return text[start...end]
    }
}
