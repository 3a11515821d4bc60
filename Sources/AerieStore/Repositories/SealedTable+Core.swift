import AerieCore

extension SealedTable {
    /// The core's tables that hold sealed values (the plugins declare theirs in
    /// `PluginStorage.sealedTables`): what each repository here seals, stated once.
    public static let core: [SealedTable] = [
        SealedTable(
            StoredTenantLabel.table, row: "id", values: [Value("label_sealed", sealedAs: .value(column: StoredTenantLabel.column))]),
        SealedTable("tenant_keys", row: "verkey", values: [Value("sealed_secret", sealedAs: .privateKey)]),
        SealedTable(
            "connections", row: "id",
            values: [sealedObject, Value("their_did_sealed", sealedAs: .value(column: "their_did"))],
            hashes: [
                LookupHash("invitation_id_hash", hashedAs: "invitation_id", field: "invitationId"),
                LookupHash("public_did_hash", hashedAs: "public_did", field: "publicDid"),
                LookupHash("first_recipient_key_hash", hashedAs: "first_recipient_key", field: "firstRecipientKey"),
            ]),
        SealedTable(
            "mailbox", row: "uid", values: [sealedObject, Value("delivery_error_sealed", sealedAs: .value(column: "delivery_error"))]),
        SealedTable(
            "outbox", row: "id",
            values: [
                Value("endpoint_sealed", sealedAs: .value(column: "endpoint")),
                Value("last_error_sealed", sealedAs: .value(column: "last_error")),
            ]),
        SealedTable("tenant_settings", row: "key", values: [sealedObject]),
    ]
}
