-- Two-way messaging (issue 17): messages a tenant sends over a connection are kept in the same
-- mailbox as the ones it receives, so a backend sees one history per connection. A sent row has
-- direction 'sent', recipient_verkey = the peer's key, sender_verkey = our pairwise key, status
-- MS-101 (queued) -> MS-102 (the peer's endpoint took it) or MS-105 (delivery failed, with the
-- reason in delivery_error). The outbox row that carries it names it (message_uid), and the
-- statement that marks the outbox row sent or failed updates the message too, so the two never
-- disagree. Received rows are unchanged (direction 'received', the default).
ALTER TABLE aerie.mailbox
    ADD COLUMN direction      text NOT NULL DEFAULT 'received' CHECK (direction IN ('received', 'sent')),
    ADD COLUMN delivery_error text;

ALTER TABLE aerie.outbox ADD COLUMN message_uid uuid;

-- A sent row is not announced as received: schema/0017 redefines aerie.notify_mailbox_insert
-- (the NOTIFY and the event log together) with that rule.

-- The delivery outcome of a sent message, in the transaction that records it (whichever process
-- delivered): messages.delivered (MS-102) or messages.deliveryFailed (MS-105, with the reason).
CREATE FUNCTION aerie.notify_delivery() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    pairwise text;
BEGIN
    SELECT c.my_did INTO pairwise FROM aerie.connections c
    WHERE c.tenant_id = NEW.tenant_id AND c.id = NEW.connection_id;
    PERFORM pg_notify('aerie_events', json_build_object(
        'tenant', NEW.tenant_id, 'kind', 'delivery', 'uid', NEW.uid, 'status', NEW.status,
        'type', left(NEW.type, 512), 'pairwiseDID', left(pairwise, 512),
        'reason', left(NEW.delivery_error, 500))::text);
    RETURN NULL;
END
$$;

CREATE TRIGGER mailbox_notify_delivery AFTER UPDATE OF status ON aerie.mailbox
    FOR EACH ROW WHEN (NEW.direction = 'sent' AND OLD.status IS DISTINCT FROM NEW.status AND NEW.status IN ('MS-102', 'MS-105'))
    EXECUTE FUNCTION aerie.notify_delivery();

GRANT EXECUTE ON FUNCTION aerie.notify_delivery() TO aerie_runtime;

