import Testing

@testable import AerieCrypto

@Suite(.timeLimit(.minutes(5))) struct ForwardTests {
    @Test func wrapsInnermostFirst() throws {
        let sender = Ed25519KeyPair.generate()
        let recipient = Ed25519KeyPair.generate()
        let mediator1 = Ed25519KeyPair.generate()
        let mediator2 = Ed25519KeyPair.generate()
        let message = Array(#"{"@type":"https://didcomm.org/trust_ping/1.0/ping","@id":"p"}"#.utf8)
        let packed = try DIDCommEnvelope.pack(message, to: [recipient.verkeyBase58], from: sender)
        let wrapped = try Forward.wrap(
            packed, recipientKey: recipient.verkeyBase58,
            routingKeys: [mediator1.verkeyBase58, DIDKey.keyReference(verkey: mediator2.verkey)])

        // The outermost layer is for the last routing key and forwards to the first one.
        let outer = try DIDCommEnvelope.unpack(wrapped) { _ in mediator2 }
        #expect(outer.algorithm == .anoncrypt)
        let forward2: [String: Any] = try json(outer.plaintext)
        #expect(forward2["@type"] as? String == Forward.messageType)
        #expect(forward2["@id"] is String)
        let (to2, inner2) = try Forward.unwrap(outer.plaintext)
        #expect(to2 == mediator1.verkeyBase58)

        let middle = try DIDCommEnvelope.unpack(inner2) { _ in mediator1 }
        let (to1, inner1) = try Forward.unwrap(middle.plaintext)
        #expect(to1 == recipient.verkeyBase58)

        let final = try DIDCommEnvelope.unpack(inner1) { _ in recipient }
        #expect(final.plaintext == message)
        #expect(final.senderVerkey == sender.verkeyBase58)
    }

    @Test func noRoutingKeysMeansNoWrapping() throws {
        let recipient = Ed25519KeyPair.generate()
        let packed = try DIDCommEnvelope.pack([1], to: [recipient.verkeyBase58], from: nil)
        #expect(try Forward.wrap(packed, recipientKey: recipient.verkeyBase58, routingKeys: []) == packed)
    }

    @Test func rejectsNonEnvelopesAndNonForwards() throws {
        let key = Ed25519KeyPair.generate().verkeyBase58
        #expect(throws: CryptoError.self) {
            try Forward.wrap(Array("nope".utf8), recipientKey: key, routingKeys: [key])
        }
        #expect(throws: CryptoError.self) {
            try Forward.wrap(Array("{}".utf8), recipientKey: "bad!", routingKeys: [key])
        }
        #expect(throws: CryptoError.self) {
            try Forward.unwrap(Array(#"{"@type":"https://didcomm.org/basicmessage/1.0/message"}"#.utf8))
        }
        #expect(throws: CryptoError.self) {
            try Forward.unwrap(Array(#"{"@type":"https://didcomm.org/routing/1.0/forward","to":"x"}"#.utf8))
        }
        #expect(throws: CryptoError.self) { try Forward.unwrap(Array("[".utf8)) }
        // The legacy type prefix is understood.
        let legacy = try Forward.unwrap(
            Array(
                #"{"@type":"did:sov:BzCbsNYhMrjHiqZDTUASHg;spec/routing/1.0/forward","to":"k","msg":{"a":"b/c"}}"#.utf8)
        )
        #expect(legacy.to == "k" && legacy.packed == Array(#"{"a":"b/c"}"#.utf8))
    }

    @Test func forwardMessageEscapesText() throws {
        let message = Forward.forwardMessage(to: "a\"b\\c\n", packed: Array("{}".utf8), id: "id")
        let object: [String: Any] = try json(message)
        #expect(object["to"] as? String == "a\"b\\c\n")
    }
}
