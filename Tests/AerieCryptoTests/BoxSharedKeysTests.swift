import Foundation
import Testing

import AerieCore

@testable import AerieCrypto

/// `BoxSharedKeys`: the `crypto_box` shared keys kept per tenant and key pair.
@Suite(.timeLimit(.minutes(5))) struct BoxSharedKeysTests {
    static let message = Array(#"{"@type":"https://didcomm.org/trust_ping/1.0/ping","@id":"p"}"#.utf8)

    /// Boxing with the shared key gives the very bytes `crypto_box_easy` gives (same nonce), and
    /// each form opens the other's box, either way round.
    @Test func sharedKeyBoxesAreByteCompatible() throws {
        for _ in 0..<20 {
            let (ours, theirs) = (Ed25519KeyPair.generate().x25519(), Ed25519KeyPair.generate().x25519())
            let nonce = Random.bytes(Box.nonceByteCount)
            let content = Random.bytes(32)
            let plain = try Box.seal(content, nonce: nonce, to: theirs.publicKey, from: ours)
            let ourShared = try Box.sharedKey(publicKey: theirs.publicKey, secret: ours.secret)
            let viaShared = try content.withUnsafeBytes { try Box.seal($0, nonce: nonce, sharedKey: ourShared) }
            #expect(viaShared == plain)
            let theirShared = try Box.sharedKey(publicKey: ours.publicKey, secret: theirs.secret)
            #expect(theirShared.isEqual(to: ourShared))
            let opened = try Box.open(plain, nonce: nonce, sharedKey: theirShared)
            #expect(opened.withUnsafeBytes { Array($0) } == content)
            let reopened = try Box.open(viaShared, nonce: nonce, from: ours.publicKey, to: theirs)
            #expect(reopened.withUnsafeBytes { Array($0) } == content)
            // Altered, or under another pair's key: refused.
            var altered = plain
            altered[altered.count - 1] ^= 1
            #expect(throws: CryptoError.self) { try Box.open(altered, nonce: nonce, sharedKey: theirShared) }
            let stranger = try Box.sharedKey(publicKey: Ed25519KeyPair.generate().x25519().publicKey, secret: theirs.secret)
            #expect(throws: CryptoError.self) { try Box.open(plain, nonce: nonce, sharedKey: stranger) }
        }
        // A low-order public key (all zeros) has no shared key, as crypto_box_easy refuses it.
        let ours = Ed25519KeyPair.generate().x25519()
        #expect(throws: CryptoError.self) { try Box.sharedKey(publicKey: [UInt8](repeating: 0, count: 32), secret: ours.secret) }
    }

    /// Entries are per scope (tenant) and key pair; a miss computes, a hit returns the same key.
    @Test func entriesArePerScopeAndPair() throws {
        let keys = BoxSharedKeys(capacity: 16)
        let ours = Ed25519KeyPair.generate()
        let theirs = Ed25519KeyPair.generate().x25519().publicKey
        var computed = 0
        let secret = { computed += 1; return ours.x25519Secret() }
        let a = try keys.sharedKey(scope: "a", ourVerkey: ours.verkey, ourSecret: secret, theirPublicKey: theirs)
        let again = try keys.sharedKey(scope: "a", ourVerkey: ours.verkey, ourSecret: secret, theirPublicKey: theirs)
        #expect(computed == 1)
        #expect(again === a)
        #expect(a.isEqual(to: try Box.sharedKey(publicKey: theirs, secret: ours.x25519Secret())))
        // Another tenant holding the same key pair computes its own entry.
        #expect(keys.lookup(scope: "b", ourVerkey: ours.verkey, theirPublicKey: theirs) == nil)
        let b = try keys.sharedKey(scope: "b", ourVerkey: ours.verkey, ourSecret: secret, theirPublicKey: theirs)
        #expect(computed == 2)
        #expect(b !== a)
        #expect(keys.count == 2)
        // A tenant's credential event drops its entries only; a deleted key drops its own.
        keys.invalidate(scope: "a")
        #expect(keys.lookup(scope: "a", ourVerkey: ours.verkey, theirPublicKey: theirs) == nil)
        #expect(keys.lookup(scope: "b", ourVerkey: ours.verkey, theirPublicKey: theirs) === b)
        let other = Ed25519KeyPair.generate()
        _ = try keys.sharedKey(scope: "b", ourVerkey: other.verkey, ourSecret: { other.x25519Secret() }, theirPublicKey: theirs)
        keys.invalidate(scope: "b", ourVerkey: ours.verkey)
        #expect(keys.lookup(scope: "b", ourVerkey: ours.verkey, theirPublicKey: theirs) == nil)
        #expect(keys.lookup(scope: "b", ourVerkey: other.verkey, theirPublicKey: theirs) != nil)
        #expect(keys.count == 1)
        // Capacity 0 keeps nothing.
        let off = BoxSharedKeys(capacity: 0)
        _ = try off.sharedKey(scope: "a", ourVerkey: ours.verkey, ourSecret: { ours.x25519Secret() }, theirPublicKey: theirs)
        #expect(off.count == 0)
    }

    /// At most `capacity` entries; an entry dropped (evicted, invalidated) is released, so its
    /// `SecretBytes` zero themselves; a hit in the older generation keeps the entry.
    @Test func boundedAndReleasedOnEviction() throws {
        let keys = BoxSharedKeys(capacity: 4)
        let ours = Ed25519KeyPair.generate()
        let peers = (0..<10).map { _ in Ed25519KeyPair.generate().x25519().publicKey }
        weak var first: SecretBytes?
        try {
            first = try keys.sharedKey(scope: "a", ourVerkey: ours.verkey, ourSecret: { ours.x25519Secret() }, theirPublicKey: peers[0])
        }()
        #expect(first != nil)
        var kept: SecretBytes?
        for (index, peer) in peers.enumerated().dropFirst() {
            let key = try keys.sharedKey(scope: "a", ourVerkey: ours.verkey, ourSecret: { ours.x25519Secret() }, theirPublicKey: peer)
            if index == 1 { kept = key }
            // peers[1] stays in use: looked up after every insertion.
            #expect(keys.lookup(scope: "a", ourVerkey: ours.verkey, theirPublicKey: peers[1]) === kept)
            #expect(keys.count <= 4)
        }
        #expect(first == nil)  // evicted and released: zeroed by SecretBytes' deinit
        #expect(keys.lookup(scope: "a", ourVerkey: ours.verkey, theirPublicKey: peers[0]) == nil)
        weak let dropped = keys.lookup(scope: "a", ourVerkey: ours.verkey, theirPublicKey: peers[9])
        #expect(dropped != nil)
        keys.invalidate(scope: "a")
        #expect(dropped == nil)
        #expect(keys.count == 0)
    }

    /// Through the envelopes (`BoxSharedKeys.shared`): a tenant's pack and unpack between the same
    /// two keys share one entry, other tenants see none of it, the envelopes open without a scope
    /// (what a peer does), and a box that does not authenticate leaves nothing behind.
    @Test func envelopesUseTheTenantsEntries() throws {
        let scope = "tenant-\(UUID())", otherScope = "tenant-\(UUID())"
        let ours = Ed25519KeyPair.generate(), peer = Ed25519KeyPair.generate()
        let peerX = try Ed25519.x25519PublicKey(fromVerkey: peer.verkey)
        let shared = BoxSharedKeys.shared
        // Their message to us, opened in the tenant: kept once authenticated.
        let inbound = try DIDCommEnvelope.pack(Self.message, to: [ours.verkeyBase58], from: peer)
        let opened = try DIDCommEnvelope(parsing: inbound).open(with: ours, keyScope: scope)
        #expect(opened.plaintext == Self.message)
        #expect(opened.senderVerkey == peer.verkeyBase58)
        let entry = shared.lookup(scope: scope, ourVerkey: ours.verkey, theirPublicKey: peerX)
        #expect(entry != nil)
        #expect(shared.lookup(scope: otherScope, ourVerkey: ours.verkey, theirPublicKey: peerX) == nil)
        // Our answer packs with the same entry; the peer opens it as any envelope.
        for _ in 0..<2 {
            let outbound = try DIDCommEnvelope.pack(Self.message, to: [peer.verkeyBase58], from: ours, keyScope: scope)
            let reply = try DIDCommEnvelope(parsing: outbound).open(with: peer)
            #expect(reply.plaintext == Self.message)
            #expect(reply.senderVerkey == ours.verkeyBase58)
            #expect(shared.lookup(scope: scope, ourVerkey: ours.verkey, theirPublicKey: peerX) === entry)
            // And the next message from them opens through the entry.
            let next = try DIDCommEnvelope.pack(Self.message, to: [ours.verkeyBase58], from: peer)
            #expect(try DIDCommEnvelope(parsing: next).open(with: ours, keyScope: scope).plaintext == Self.message)
        }
        #expect(shared.lookup(scope: otherScope, ourVerkey: ours.verkey, theirPublicKey: peerX) == nil)
        // The other tenant packing from the same key pair gets an entry of its own.
        let fromOther = try DIDCommEnvelope.pack(Self.message, to: [peer.verkeyBase58], from: ours, keyScope: otherScope)
        #expect(try DIDCommEnvelope(parsing: fromOther).open(with: peer).plaintext == Self.message)
        let otherEntry = shared.lookup(scope: otherScope, ourVerkey: ours.verkey, theirPublicKey: peerX)
        #expect(otherEntry != nil && otherEntry !== entry)
        shared.invalidate(scope: scope)
        shared.invalidate(scope: otherScope)
        #expect(shared.lookup(scope: scope, ourVerkey: ours.verkey, theirPublicKey: peerX) == nil)
    }

    /// A box whose content key does not authenticate (the sender's sealed verkey swapped for
    /// another's) is refused and its pair is not kept.
    @Test func aRefusedBoxKeepsNothing() throws {
        let scope = "tenant-\(UUID())"
        let ours = Ed25519KeyPair.generate(), peer = Ed25519KeyPair.generate(), impostor = Ed25519KeyPair.generate()
        let envelope = try DIDCommEnvelope.pack(Self.message, to: [ours.verkeyBase58], from: peer)
        // The sender field (a sealed box of the sender's verkey to us) swapped for one that
        // names the impostor: the content key's box then does not authenticate.
        let claiming = try DIDCommEnvelope.pack(Self.message, to: [ours.verkeyBase58], from: impostor)
        func protected(_ envelope: [UInt8]) throws -> (text: String, header: String, sender: String) {
            let text = try #require(try JSONValue(parsing: envelope, maxValues: 100)["protected"]?.stringValue)
            let header = String(decoding: try Base64.decode(text), as: UTF8.self)
            guard case .array(let recipients)? = try JSONValue(parsing: Array(header.utf8), maxValues: 100)["recipients"],
                let sender = recipients.first?["header"]?["sender"]?.stringValue
            else { throw CryptoError(.malformedEnvelope, "test envelope has no sender") }
            return (text, header, sender)
        }
        let genuine = try protected(envelope), impostors = try protected(claiming)
        let forgedProtected = Base64.encodeURL(Array(genuine.header.replacingOccurrences(of: genuine.sender, with: impostors.sender).utf8))
        let forged = Array(String(decoding: envelope, as: UTF8.self).replacingOccurrences(of: genuine.text, with: forgedProtected).utf8)
        #expect(throws: CryptoError.self) { try DIDCommEnvelope(parsing: forged).open(with: ours, keyScope: scope) }
        let impostorX = try Ed25519.x25519PublicKey(fromVerkey: impostor.verkey)
        #expect(BoxSharedKeys.shared.lookup(scope: scope, ourVerkey: ours.verkey, theirPublicKey: impostorX) == nil)
        // The genuine one still opens (and is kept).
        #expect(try DIDCommEnvelope(parsing: envelope).open(with: ours, keyScope: scope).senderVerkey == peer.verkeyBase58)
        BoxSharedKeys.shared.invalidate(scope: scope)
    }
}
