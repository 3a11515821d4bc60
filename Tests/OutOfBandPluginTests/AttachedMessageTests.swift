import AerieCore
import AerieCrypto
import Testing

@testable import OutOfBandPlugin

@Suite(.timeLimit(.minutes(10))) struct AttachedMessageTests {
    static let request: JSONValue = [
        "@type": "https://didcomm.org/present-proof/2.0/request-presentation", "@id": "req-1",
        "~thread": ["thid": "thread-1"],
    ]

    func invitation(_ attachments: [JSONValue], key: String = "requests~attach") -> Invitation {
        Invitation(
            kind: .outOfBand, type: "https://didcomm.org/out-of-band/1.1/invitation", id: "inv-1", attachments: attachments,
            json: .object(["@id": "inv-1", key: .array(attachments)]))
    }

    @Test func readsJSONObjectJSONTextAndBase64() throws {
        let text = String(decoding: Self.request.serialized(), as: UTF8.self)
        let forms: [JSONValue] = [
            ["@id": "a", "mime-type": "application/json", "data": ["json": Self.request]],
            ["@id": "a", "data": ["json": .string(text)]],
            ["@id": "a", "data": ["base64": .string(Base64.encode(Self.request.serialized()))]],
            ["@id": "a", "data": ["base64": .string(Base64.encodeURL(Self.request.serialized()))]],
        ]
        for form in forms {
            #expect(try AttachedMessage.extract(from: invitation([form])) == Self.request, "\(form)")
        }
        #expect(try AttachedMessage.extract(from: invitation([])) == nil)
        // The seeds' spelling.
        #expect(
            try AttachedMessage.extract(from: invitation([["data": ["json": Self.request]]], key: "request~attach"))
                == Self.request)
    }

    @Test func brokenAttachmentsAreInvalidInvitations() {
        let broken: [(JSONValue, String)] = [
            (["@id": "a"], "invalid_invitation"),
            (["data": "text"], "invalid_invitation"),
            (["data": [:]], "invalid_invitation"),
            (["data": ["json": 42]], "invalid_invitation"),
            (["data": ["json": "{not json"]], "invalid_invitation"),
            (["data": ["json": "[1,2]"]], "invalid_invitation"),
            (["data": ["base64": "!!!not base64!!!"]], "invalid_invitation"),
            (["data": ["base64": .string(Base64.encode([0xff, 0xfe, 0x00]))]], "invalid_invitation"),
            (["data": ["json": ["@id": "no-type"]]], "invalid_invitation"),
            (["data": ["json": ["@type": "https://didcomm.org/x/1.0/y"]]], "invalid_invitation"),
            (["data": ["links": ["https://example.com/a"]]], "unsupported_invitation"),
            // Ids and thread ids over `PeerFieldLimits.id` are refused, not cut.
            (["data": ["json": ["@type": "https://didcomm.org/x/1.0/y", "@id": .string(String(repeating: "i", count: 257))]]],
             "invalid_invitation"),
            (["data": ["json": ["@type": "https://didcomm.org/x/1.0/y", "@id": "a",
                                "~thread": ["thid": .string(String(repeating: "t", count: PeerFieldLimits.id.maxBytes + 1))]]]],
             "invalid_invitation"),
        ]
        for (attachment, code) in broken {
            do {
                _ = try AttachedMessage.extract(from: invitation([attachment]))
                Issue.record("expected \(code) for \(attachment)")
            } catch let error as AerieError {
                #expect(error.code.name == code, "\(attachment): \(error)")
                #expect(error.field != nil)
            } catch {
                Issue.record("unexpected \(error)")
            }
        }
    }

    @Test func oversizeAttachmentIsRefused() {
        let big = String(repeating: "x", count: AttachedMessage.maxBytes + 1)
        let attachment: JSONValue = ["data": ["json": .string(big)]]
        #expect(throws: AerieError.self) { try AttachedMessage.extract(from: invitation([attachment])) }
    }

    @Test func reuseMessageNamesTheInvitationAsParentThread() {
        let message = OutOfBandMessages.reuse(id: "r-1", invitationId: "inv-9", version: "1.1")
        #expect(message["@type"] == "https://didcomm.org/out-of-band/1.1/handshake-reuse")
        #expect(message["~thread"]?["thid"] == "r-1")
        #expect(message["~thread"]?["pthid"] == "inv-9")
        #expect(OutOfBandMessages.parentThreadId(message) == "inv-9")
    }

    @Test func answersInTheInvitationsVersion() {
        func version(_ type: String) -> String {
            OutOfBandMessages.version(of: Invitation(kind: .outOfBand, type: type, id: "i", json: [:]))
        }
        #expect(version("https://didcomm.org/out-of-band/1.0/invitation") == "1.0")
        #expect(version("did:sov:BzCbsNYhMrjHiqZDTUASHg;spec/out-of-band/1.0/invitation") == "1.0")
        #expect(version("https://didcomm.org/out-of-band/1.1/invitation") == "1.1")
        #expect(version("https://didcomm.org/out-of-band/1.2/invitation") == "1.1")
    }
}
