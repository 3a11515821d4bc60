import AerieCrypto
import CSodium

/// Inputs and work units for `aerie-bench crypto`: one authcrypt pack + unpack (one
/// recipient), and the bare libsodium calls that same round trip needs, so the bench can show
/// how much our envelope code adds on top of the cryptography.
struct CryptoBenchmarks {
    let sender: Ed25519KeyPair
    let recipient: Ed25519KeyPair
    let recipientVerkeyBase58: String
    let message: [UInt8]

    init(messageSize: Int = 1024) {
        sender = Ed25519KeyPair.generate()
        recipient = Ed25519KeyPair.generate()
        recipientVerkeyBase58 = recipient.verkeyBase58
        // A JSON message of the requested size, as DIDComm plaintexts are.
        let head = Array(#"{"@type":"https://didcomm.org/basicmessage/1.0/message","content":""#.utf8)
        let fill = max(0, messageSize - head.count - 2)
        message = head + [UInt8](repeating: UInt8(ascii: "x"), count: fill) + Array(#""}"#.utf8)
    }

    /// Packs for the recipient and unpacks again; returns the plaintext length.
    func packUnpackOnce() throws -> Int {
        let packed = try DIDCommEnvelope.pack(message, to: [recipientVerkeyBase58], from: sender)
        let unpacked = try DIDCommEnvelope.unpack(packed) { _ in recipient }
        return unpacked.plaintext.count
    }

    /// The same between two tenants of a server (`keyScope`): the X25519 conversions and the
    /// box shared keys (`BoxSharedKeys`) kept, as for every message after the first of a pair.
    /// `sharedKeysKept` false: the box shared keys dropped before each round trip (the X25519
    /// conversions still kept), i.e. what a pair's first pack and open cost.
    func packUnpackScopedOnce(sharedKeysKept: Bool = true) throws -> Int {
        if !sharedKeysKept {
            BoxSharedKeys.shared.invalidate(scope: "bench-sender")
            BoxSharedKeys.shared.invalidate(scope: "bench-recipient")
        }
        let packed = try DIDCommEnvelope.pack(message, to: [recipientVerkeyBase58], from: sender, keyScope: "bench-sender")
        let unpacked = try DIDCommEnvelope(parsing: packed).open(with: recipient, keyScope: "bench-recipient")
        return unpacked.plaintext.count
    }

    /// The libsodium calls of one authcrypt pack + unpack, on preallocated buffers:
    /// pack: sender Ed25519->X25519 (secret and public), recipient public conversion, random
    /// CEK and nonces, crypto_box of the CEK, crypto_box_seal of the sender verkey, content
    /// AEAD; unpack: recipient conversions, sealed-box open, sender public conversion,
    /// crypto_box_open, AEAD open. Returns a byte of the result so nothing is optimised away.
    func rawPrimitivesOnce() -> Int {
        Sodium.ensureReady()
        var senderXSK = [UInt8](repeating: 0, count: 32)
        var senderXPK = [UInt8](repeating: 0, count: 32)
        var recipientXSK = [UInt8](repeating: 0, count: 32)
        var recipientXPK = [UInt8](repeating: 0, count: 32)
        var targetXPK = [UInt8](repeating: 0, count: 32)
        var fromXPK = [UInt8](repeating: 0, count: 32)
        var cek = [UInt8](repeating: 0, count: 32)
        var cekOut = [UInt8](repeating: 0, count: 32)
        var nonce = [UInt8](repeating: 0, count: 24)
        var iv = [UInt8](repeating: 0, count: 12)
        var boxedCEK = [UInt8](repeating: 0, count: 48)
        let senderText = Array(sender.verkeyBase58.utf8)
        var sealedSender = [UInt8](repeating: 0, count: senderText.count + 48)
        var openedSender = [UInt8](repeating: 0, count: senderText.count)
        var ciphertext = [UInt8](repeating: 0, count: message.count)
        var plaintext = ciphertext
        var tag = [UInt8](repeating: 0, count: 16)
        let aad = [UInt8](repeating: UInt8(ascii: "e"), count: 400)
        var rc: Int32 = 0

        sender.secretKey.withUnsafeBytes { rc |= crypto_sign_ed25519_sk_to_curve25519(&senderXSK, u8($0)) }
        rc |= crypto_sign_ed25519_pk_to_curve25519(&senderXPK, sender.verkey)
        rc |= crypto_sign_ed25519_pk_to_curve25519(&targetXPK, recipient.verkey)
        randombytes_buf(&cek, 32)
        randombytes_buf(&nonce, 24)
        rc |= crypto_box_easy(&boxedCEK, cek, 32, nonce, targetXPK, senderXSK)
        rc |= crypto_box_seal(&sealedSender, senderText, UInt64(senderText.count), targetXPK)
        randombytes_buf(&iv, 12)
        rc |= crypto_aead_chacha20poly1305_ietf_encrypt_detached(
            &ciphertext, &tag, nil, message, UInt64(message.count), aad, UInt64(aad.count), nil, iv, cek)

        recipient.secretKey.withUnsafeBytes { rc |= crypto_sign_ed25519_sk_to_curve25519(&recipientXSK, u8($0)) }
        rc |= crypto_sign_ed25519_pk_to_curve25519(&recipientXPK, recipient.verkey)
        rc |= crypto_box_seal_open(&openedSender, sealedSender, UInt64(sealedSender.count), recipientXPK, recipientXSK)
        rc |= crypto_sign_ed25519_pk_to_curve25519(&fromXPK, sender.verkey)
        rc |= crypto_box_open_easy(&cekOut, boxedCEK, 48, nonce, fromXPK, recipientXSK)
        rc |= crypto_aead_chacha20poly1305_ietf_decrypt_detached(
            &plaintext, nil, ciphertext, UInt64(ciphertext.count), tag, aad, UInt64(aad.count), iv, cekOut)
        precondition(rc == 0, "raw primitive round trip failed")
        return Int(plaintext[0])
    }
}

