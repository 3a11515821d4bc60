/// The SQL the exchange tables share (`aerie.<table>`, keyed by tenant and id, with a `state`),
/// for their plugins' migrations.
package enum ExchangeSchema {
    /// Row-level security by `aerie.tenant_id`, forced, and the runtime role's grants.
    package static func tenantIsolation(_ table: String) -> String {
        """
        ALTER TABLE aerie.\(table) ENABLE ROW LEVEL SECURITY;
        ALTER TABLE aerie.\(table) FORCE ROW LEVEL SECURITY;
        CREATE POLICY tenant_isolation ON aerie.\(table)
            USING (tenant_id = NULLIF(current_setting('aerie.tenant_id', true), '')::uuid)
            WITH CHECK (tenant_id = NULLIF(current_setting('aerie.tenant_id', true), '')::uuid);
        GRANT SELECT, INSERT, UPDATE, DELETE ON aerie.\(table) TO aerie_runtime;
        """
    }

    /// Every new row and state change of `aerie.<table>` is an event of `kind`: `eventFunction`
    /// and the two triggers that call it.
    package static func stateEvents(table: String, function: String, kind: String, payload: String) -> String {
        """
        \(eventFunction(function, kind: kind, payload: payload))
        CREATE TRIGGER \(table)_event AFTER INSERT ON aerie.\(table)
            FOR EACH ROW EXECUTE FUNCTION aerie.\(function)();
        CREATE TRIGGER \(table)_state_event AFTER UPDATE ON aerie.\(table)
            FOR EACH ROW WHEN (OLD.state IS DISTINCT FROM NEW.state) EXECUTE FUNCTION aerie.\(function)();
        """
    }

    /// The trigger function of an exchange table's events of `kind`, with `payload`
    /// (`jsonb_build_object` arguments over `NEW`): logged in `aerie.events` for a tenant with a
    /// backend unless the transaction set `aerie.tenant_logs` off (as schema/0035's
    /// `record_event` decides), and notified to the server processes.
    package static func eventFunction(_ function: String, kind: String, payload: String) -> String {
        """
        CREATE OR REPLACE FUNCTION aerie.\(function)() RETURNS trigger
        LANGUAGE plpgsql AS $$
        DECLARE
            payload jsonb := jsonb_build_object(\(payload));
            notified text;
        BEGIN
            IF current_setting('aerie.tenant_logs', true) IS DISTINCT FROM 'off' THEN
                INSERT INTO aerie.events (tenant_id, backend_id, kind, data)
                SELECT t.id, t.backend_id, '\(kind)', payload FROM aerie.tenants t
                WHERE t.id = NEW.tenant_id AND t.backend_id IS NOT NULL;
            END IF;
            notified := pg_notify('aerie_events',
                (jsonb_build_object('tenant', NEW.tenant_id, 'kind', '\(kind)') || payload)::text);
            RETURN NULL;
        END
        $$;
        GRANT EXECUTE ON FUNCTION aerie.\(function)() TO aerie_runtime;
        """
    }

    /// The open exchanges' index (`ExchangeRows.checkRoom` counts them per connection and per
    /// tenant), so the count reads only those however many ended ones a tenant keeps.
    package static func openIndex(_ table: String) -> String {
        """
        CREATE INDEX \(table)_open ON aerie.\(table) (tenant_id, connection_id)
            WHERE state NOT IN ('done', 'abandoned');
        """
    }
}
