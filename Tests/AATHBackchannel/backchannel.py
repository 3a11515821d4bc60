#!/usr/bin/env python3
"""Aerie backchannel for the Aries Agent Test Harness (AATH, openwallet-foundation/owl-agent-test-harness).

The harness drives each agent over HTTP (`/agent/command/<topic>/<operation>`,
`/agent/response/<topic>/<id>`); this service answers those calls for one Aerie tenant by calling
Aerie's line-delimited JSON-RPC 2.0 on TCP. Python 3 standard library only.

    python3 backchannel.py --port 9030 --aerie 127.0.0.1:7400 --token-file TOKEN_FILE --label Bob

Covered: the connection (RFC 0160), did-exchange (RFC 0023), out-of-band (RFC 0434, handshake,
reuse and connectionless) and peer-DID (RFC 0793) topics, with Aerie as invitee/requester or
inviter/responder; issue-credential v2 (RFC 0453) and present-proof v2 (RFC 0454) JSON-LD did:key,
with Aerie as holder and prover.
Aerie runs each handshake on its own (it answers a Request, sends the trust ping or `complete`);
where the harness asks for an explicit step Aerie has already taken (accept-request,
send-response, accept-invitation after a reuse), the backchannel waits, bounded, for the state the
step leads to and answers the connection in the harness's shape. States are translated from
Aerie's numbers to the names the harness expects (see STATE_NAMES).
"""

import argparse
import json
import os
import socket
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

DIDEXCHANGE_11 = "https://didcomm.org/didexchange/1.1"

# Aerie state number -> the state name the harness expects, per topic and role.
# Aerie: 1 initialized, 2 requested, 3 responded, 4 accepted, 5 reused, 0 failed, 6 deleted.
STATE_NAMES = {
    ("connection", "invitee"): {1: "invited", 2: "requested", 3: "responded", 4: "complete", 5: "complete", 0: "abandoned"},
    ("connection", "inviter"): {1: "invited", 2: "requested", 3: "responded", 4: "complete", 5: "complete", 0: "abandoned"},
    ("did-exchange", "invitee"): {
        1: "invitation-received", 2: "request-sent", 3: "response-received", 4: "completed", 5: "completed", 0: "abandoned",
    },
    ("did-exchange", "inviter"): {
        1: "invitation-sent", 2: "request-received", 3: "response-sent", 4: "completed", 5: "completed", 0: "abandoned",
    },
}
ESTABLISHED = (4, 5)
# The DID methods of Aerie's own didexchange DIDs (`didMethod`, `useDid`).
AERIE_DID_METHODS = ("did:peer:2", "did:peer:4")
WAIT_SECONDS = 30.0
# What issue-credential-v2/prepare-json-ld answers the harness for the holder's DID: Aerie binds
# credentialSubject.id itself (a did:key it makes in credentials.propose), so send-proposal
# removes this marker again.
HOLDER_DID_MARKER = "did:key:aerie-binds-the-subject-when-proposing"
SUPPORTED_PROOF_TYPES = ("Ed25519Signature2018", "Ed25519Signature2020")
POLL_SECONDS = 0.25


def short_form(did):
    """A did:peer:4 in its short form (both forms name one DID); any other DID as it is."""
    if isinstance(did, str) and did.startswith("did:peer:4") and did.count(":") == 3:
        return did.rsplit(":", 1)[0]
    return did


def log(*parts):
    print(time.strftime("%H:%M:%S"), *parts, file=sys.stderr, flush=True)


class RPCError(Exception):
    def __init__(self, code, message, data=None):
        super().__init__(f"{code} {message}")
        self.code = code
        self.message = message
        self.data = data or {}

    @property
    def name(self):
        return self.data.get("code") if isinstance(self.data, dict) else None


class AerieRPC:
    """One authenticated JSON-RPC session, reconnected (and re-authenticated) when it drops."""

    def __init__(self, host, port, token, timeout=150.0):
        self.host, self.port, self.token, self.timeout = host, port, token, timeout
        self.lock = threading.Lock()
        self.sock = None
        self.reader = None
        self.next_id = 0

    def _close(self):
        try:
            if self.sock:
                self.sock.close()
        except OSError:
            pass
        self.sock = None
        self.reader = None

    def _exchange(self, method, params):
        self.next_id += 1
        request_id = self.next_id
        line = json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params or {}})
        self.sock.sendall(line.encode() + b"\n")
        while True:
            raw = self.reader.readline()
            if not raw:
                raise ConnectionError("Aerie closed the session")
            answer = json.loads(raw)
            if answer.get("id") != request_id:
                continue  # a notification, or the answer to a call given up on
            if "error" in answer:
                error = answer["error"]
                raise RPCError(error.get("code"), error.get("message", ""), error.get("data"))
            return answer.get("result")

    def _connect(self):
        self.sock = socket.create_connection((self.host, self.port), timeout=self.timeout)
        self.reader = self.sock.makefile("rb")
        self._exchange("session.authenticate", {"token": self.token})

    def call(self, method, params=None):
        with self.lock:
            for attempt in (1, 2):
                try:
                    if self.sock is None:
                        self._connect()
                    return self._exchange(method, params)
                except (OSError, ConnectionError, ValueError) as error:
                    self._close()
                    if attempt == 2:
                        raise ConnectionError(f"Aerie at {self.host}:{self.port}: {error}") from error


class HTTPAnswer(Exception):
    def __init__(self, status, body):
        super().__init__(f"{status}")
        self.status = status
        self.body = body


class AerieAgent:
    """The harness's topics and operations, on one Aerie tenant."""

    def __init__(self, rpc, label):
        self.rpc = rpc
        self.label = label
        self.lock = threading.Lock()
        # Explicit steps already answered: a second one is the harness testing that the agent
        # refuses to continue a finished exchange (RFC 0023 T007, RFC 0160 T003/T004).
        self.responses_sent = set()
        self.requests_accepted = set()

    # --- Aerie calls -------------------------------------------------------------------------

    def connection(self, connection_id):
        try:
            return self.rpc.call("connections.get", {"connectionId": connection_id})
        except RPCError as error:
            if error.name == "not_found" or error.code == -32004:
                raise HTTPAnswer(404, f"no connection {connection_id}")
            if error.code == -32602:
                raise HTTPAnswer(404, f"no connection {connection_id}: {error.message}")
            raise

    def all_connections(self):
        found, after = [], None
        while True:
            params = {"limit": 500}
            if after:
                params["after"] = after
            page = self.rpc.call("connections.list", params)
            found.extend(page.get("connections", []))
            after = page.get("next")
            if not after:
                return found

    def wait_for(self, connection_id, done, seconds=WAIT_SECONDS):
        deadline = time.monotonic() + seconds
        view = self.connection(connection_id)
        while not done(view) and time.monotonic() < deadline:
            time.sleep(POLL_SECONDS)
            view = self.connection(connection_id)
        return view

    @staticmethod
    def view_of(result):
        if isinstance(result, dict) and isinstance(result.get("connection"), dict):
            return result["connection"]
        if isinstance(result, dict) and "connectionId" in result and "state" in result:
            return result
        raise HTTPAnswer(500, f"Aerie answered no connection: {json.dumps(result)[:500]}")

    # --- the harness's shapes -----------------------------------------------------------------

    @staticmethod
    def role(view):
        return "inviter" if view.get("role") == "inviter" else "invitee"

    def state_name(self, view, topic):
        names = STATE_NAMES[(topic, self.role(view))]
        return names.get(view.get("state"), view.get("stateName", "unknown"))

    def info(self, view, topic, **extra):
        answer = {
            "connection_id": view["connectionId"],
            "state": self.state_name(view, topic),
            "my_did": view.get("pwDid"),
            "their_did": view.get("theirDid"),
            "their_label": view.get("label"),
            "their_role": "invitee" if self.role(view) == "inviter" else "inviter",
            "connection_protocol": view.get("handshakeProtocol"),
            "aerie_state": view.get("state"),
            "aerie_state_name": view.get("stateName"),
            "connection": view,
        }
        answer.update(extra)
        return answer

    @staticmethod
    def invitation_of(data):
        if not isinstance(data, dict):
            raise HTTPAnswer(400, "data must be the invitation object")
        invitation = dict(data)
        for key in ("mediator_connection_id", "use_existing_connection"):
            invitation.pop(key, None)
        return invitation

    # --- GET ----------------------------------------------------------------------------------

    def get_command(self, topic, record_id, operation):
        if topic == "status":
            try:
                self.rpc.call("system.ping")
                return 200, {"status": "active"}
            except Exception as error:  # noqa: BLE001  (any failure: the agent is not usable)
                return 418, {"status": "inactive", "reason": str(error)}
        if topic == "version":
            version = self.rpc.call("system.version")
            return 200, version.get("version", "unknown") if isinstance(version, dict) else str(version)
        if topic in ("connection", "did-exchange"):
            if record_id:
                return 200, self.info(self.connection(record_id), topic)
            return 200, [self.info(view, topic) for view in self.all_connections()]
        if topic == "active-connection" and record_id:
            for view in self.all_connections():
                if short_form(view.get("theirDid")) == short_form(record_id) and view.get("state") in ESTABLISHED:
                    return 200, self.info(view, "connection", state="active")
            return 400, f"Active connection not found for their_did {record_id}"
        if topic == "did":
            raise HTTPAnswer(501, "Aerie tenants have no public DID (only pairwise DIDs)")
        if topic == "proof-v2" and record_id:
            return 200, self.proof_info(self.proof_request(record_id, seconds=0))
        if topic == "issue-credential-v2" and record_id:
            return 200, self.exchange_info(self.credential_exchange(record_id, seconds=0))
        if topic == "credential" and record_id and operation is None:
            return 200, self.credential_info(record_id)
        raise HTTPAnswer(501, f"topic {topic} is not implemented for Aerie")

    def get_response(self, topic, record_id):
        """The connection made from an invitation of ours, by the invitation's @id (what ACA-Py's
        backchannel finds through its webhooks). `{}` when none is there within 5 s."""
        if topic not in ("connection", "did-exchange") or not record_id:
            raise HTTPAnswer(501, f"response topic {topic} is not implemented for Aerie")
        deadline = time.monotonic() + 5.0
        while True:
            matching = [v for v in self.all_connections() if v.get("invitationId") == record_id]
            # A connection a Request made (state 2 on) before the open invitation itself.
            matching.sort(key=lambda v: (v.get("state") in (1,), v.get("createdAt", "")))
            if matching and (matching[0].get("state") != 1 or time.monotonic() >= deadline):
                return 200, self.info(matching[0], topic)
            if time.monotonic() >= deadline:
                return 200, {}
            time.sleep(POLL_SECONDS)

    # --- POST ---------------------------------------------------------------------------------

    def post_command(self, topic, operation, record_id, data):
        handler = {
            ("connection", "create-invitation"): self.connection_create_invitation,
            ("connection", "receive-invitation"): self.connection_receive_invitation,
            ("connection", "accept-invitation"): self.connection_accept_invitation,
            ("connection", "accept-request"): self.connection_accept_request,
            ("connection", "send-ping"): self.connection_send_ping,
            ("connection", "remove"): self.connection_remove,
            ("out-of-band", "send-invitation-message"): self.oob_send_invitation,
            ("out-of-band", "receive-invitation"): self.oob_receive_invitation,
            ("did-exchange", "receive-invitation"): self.oob_receive_invitation,
            ("did-exchange", "send-request"): self.didexchange_send_request,
            ("did-exchange", "send-response"): self.didexchange_send_response,
            ("proof-v2", "send-presentation"): self.proof_send_presentation,
            ("issue-credential-v2", "prepare-json-ld"): self.credential_prepare_json_ld,
            ("issue-credential-v2", "send-proposal"): self.credential_send_proposal,
            ("issue-credential-v2", "send-request"): self.credential_send_request,
            ("issue-credential-v2", "store"): self.credential_store,
        }.get((topic, operation))
        if handler is None:
            raise HTTPAnswer(501, f"{topic}/{operation} is not implemented for Aerie")
        return handler(record_id, data or {})

    def connection_create_invitation(self, record_id, data):
        if data.get("mediator_connection_id"):
            raise HTTPAnswer(501, "Aerie does not use a mediator")
        try:
            created = self.rpc.call("connections.createInvitation", {"label": self.label})
        except RPCError as error:
            if error.code == -32601:
                raise HTTPAnswer(501, "this Aerie has no inviter role (connections.createInvitation)")
            raise
        return 200, {
            "connection_id": created["connectionId"],
            "state": "invited",
            "invitation": created["invitation"],
            "invitation_url": created.get("invitationUrl") or created.get("url"),
        }

    def connection_receive_invitation(self, record_id, data):
        if data.get("mediator_connection_id"):
            raise HTTPAnswer(501, "Aerie does not use a mediator")
        created = self.rpc.call("connections.createWithInvite", {"invitation": self.invitation_of(data)})
        return 200, self.info(self.view_of(created), "connection")

    def connection_accept_invitation(self, record_id, data):
        view = self.connection(record_id)
        if view.get("state") == 1 and self.role(view) == "invitee":
            view = self.view_of(self.rpc.call("connections.connect", {"connectionId": record_id, "label": self.label}))
        return 200, self.info(view, "connection")

    def connection_accept_request(self, record_id, data):
        """Aerie answers a Request on its own: wait until it has (state 3 on) and say so. A second
        accept-request on the same connection finds no Request waiting: 406, as the harness
        expects of an inviter that refuses a second Request to a single-use invitation."""
        return self.automatic_step(
            record_id, self.requests_accepted, topic="connection", what="Request answered",
            repeated=(406, "request_not_accepted", "no Request is waiting on this connection: Aerie answered its only "
                      "Request and refuses any other to a single-use invitation"))

    def connection_send_ping(self, record_id, data):
        view = self.wait_for(record_id, lambda v: v.get("state") in ESTABLISHED + (0,))
        if view.get("state") not in ESTABLISHED:
            raise HTTPAnswer(400, f"connection {record_id} is not established: {view.get('stateName')}")
        try:
            ping = self.rpc.call("connections.ping", {"connectionId": record_id, "timeoutSeconds": 20})
        except RPCError as error:
            raise HTTPAnswer(500, f"trust ping failed: {error.message}")
        return 200, self.info(self.connection(record_id), "connection", ping=ping)

    def connection_remove(self, record_id, data):
        self.rpc.call("connections.delete", {"connectionId": record_id})
        return 200, {"connection_id": record_id, "state": "deleted"}

    def oob_send_invitation(self, record_id, data):
        if data.get("mediator_connection_id"):
            raise HTTPAnswer(501, "Aerie does not use a mediator")
        if data.get("attachments"):
            raise HTTPAnswer(501, "Aerie has no credential or proof exchange to attach")
        method = data.get("use_did_method")
        if method and method not in AERIE_DID_METHODS:
            raise HTTPAnswer(501, f"Aerie makes {' and '.join(AERIE_DID_METHODS)} DIDs, not {method}")
        if data.get("use_public_did"):
            raise HTTPAnswer(501, "Aerie tenants have no public DID to invite with")
        protocols = data.get("handshake_protocols") or [DIDEXCHANGE_11]
        params = {"handshakeProtocols": protocols, "label": self.label}
        if method:
            # The invitation's service is the tenant's invitation DID in that method.
            params["useDid"] = method
        try:
            created = self.rpc.call("outOfBand.createInvitation", params)
        except RPCError as error:
            if error.code == -32601:
                raise HTTPAnswer(501, "this Aerie has no inviter role (outOfBand.createInvitation)")
            raise
        answer = {"state": "invitation-sent", "invitation": created["invitation"]}
        connection_id = created.get("connectionId") or (created.get("connection") or {}).get("connectionId")
        if connection_id:
            answer["connection_id"] = connection_id
        if created.get("invitationUrl") or created.get("url"):
            answer["invitation_url"] = created.get("invitationUrl") or created.get("url")
        return 200, answer

    def oob_receive_invitation(self, record_id, data):
        """Without use_existing_connection: a new connection for the invitation, not yet
        requested (the harness sends the request next). With it: Aerie's out-of-band decision
        table (outOfBand.accept), which sends handshake-reuse over a connection it already has
        with this inviter and waits for handshake-reuse-accepted."""
        if data.get("mediator_connection_id"):
            raise HTTPAnswer(501, "Aerie does not use a mediator")
        use_existing = str(data.get("use_existing_connection", False)).lower() == "true"
        invitation = self.invitation_of(data)
        if use_existing:
            existing = self.rpc.call("connections.findExisting", {"invitation": invitation})
            found = existing.get("connection") if isinstance(existing, dict) else None
            if isinstance(found, dict) and found.get("state") in ESTABLISHED:
                accepted = self.rpc.call("outOfBand.accept", {"invitation": invitation, "label": self.label, "wait": True})
                view = self.view_of(accepted)
                if view.get("state") in ESTABLISHED:
                    return 200, self.info(view, "did-exchange", state="completed", reused=accepted.get("action") == "reuse")
                return 200, self.info(view, "did-exchange")
        created = self.rpc.call("outOfBand.createConnection", {"invitation": invitation})
        view = self.view_of(created)
        answer = self.info(view, "did-exchange")
        # State 1: a handshake to request next. An invitation without handshake (connectionless,
        # an attached offer or request) is a connection in state 4 at once, its attachment in the
        # mailbox: received, and nothing for the harness to request.
        if view.get("state") == 1 or not invitation.get("handshake_protocols"):
            answer["state"] = "invitation-received"
        return 200, answer

    def didexchange_send_request(self, record_id, data):
        view = self.connection(record_id)
        method = data.get("use_did_method")
        if method and method not in AERIE_DID_METHODS and view.get("state") == 1:
            raise HTTPAnswer(501, f"Aerie makes {' and '.join(AERIE_DID_METHODS)} DIDs, not {method}")
        if view.get("state") == 1 and self.role(view) == "invitee":
            params = {"connectionId": record_id, "label": self.label}
            if method:
                params["didMethod"] = method
            view = self.view_of(self.rpc.call("connections.connect", params))
        return 200, self.info(view, "did-exchange")

    def didexchange_send_response(self, record_id, data):
        """Aerie sends the Response when the Request arrives: wait until it has. A second
        send-response is an attempt to continue a finished exchange: 400 (problem report)."""
        return self.automatic_step(
            record_id, self.responses_sent, topic="did-exchange", what="Response sent",
            repeated=(400, "problem_report", "the exchange already has its response; Aerie does not send another"))

    # --- issue-credential v2 (RFC 0453), JSON-LD (RFC 0593) with did:key, Aerie as holder -------

    def credential_exchange(self, thread_id, seconds=WAIT_SECONDS, states=None):
        """The exchange on the issuer's thread, waiting up to `seconds` for it to exist (and, with
        `states`, to reach one of them)."""
        deadline = time.monotonic() + seconds
        while True:
            found, after = None, None
            while found is None:
                params = {"limit": 500}
                if after:
                    params["after"] = after
                page = self.rpc.call("credentials.exchanges", params)
                found = next((v for v in page.get("exchanges", []) if v.get("threadId") == thread_id), None)
                after = page.get("nextCursor")
                if not after:
                    break
            if found is not None and (states is None or found.get("state") in states):
                return found
            if time.monotonic() >= deadline:
                if found is None:
                    raise HTTPAnswer(404, f"no credential exchange on thread {thread_id}")
                return found
            time.sleep(POLL_SECONDS)

    @staticmethod
    def exchange_info(view):
        answer = {
            "state": view["state"],
            "thread_id": view["threadId"],
            "cred_ex_id": view["exchangeId"],
            "connection_id": view.get("connectionId"),
            "aerie_exchange": view,
        }
        if view.get("credentialId"):
            answer["credential_id"] = view["credentialId"]
            answer["json-ld"] = {"credential_id": view["credentialId"]}
        return answer

    def credential_info(self, credential_id):
        stored = self.rpc.call("credentials.get", {"credentialId": credential_id})
        return {"credential_id": stored["credentialId"], "credential": stored["credential"], "aerie_credential": stored}

    @staticmethod
    def require_json_ld(data):
        filters = data.get("filter") or {}
        if set(filters) - {"json-ld"} or not isinstance(filters.get("json-ld"), dict):
            raise HTTPAnswer(501, f"Aerie holds JSON-LD credentials only, not {sorted(filters)}")
        return filters["json-ld"]

    def credential_prepare_json_ld(self, record_id, data):
        """The holder DID for the proposal's credentialSubject.id. Aerie binds the subject itself
        (credentials.propose makes a did:key of the tenant for a credential proposed without
        one), so this answers a marker that send-proposal takes out again."""
        if data.get("did_method") != "key":
            raise HTTPAnswer(501, f"Aerie holders are did:key, not did:{data.get('did_method')}")
        if data.get("proof_type") not in SUPPORTED_PROOF_TYPES:
            raise HTTPAnswer(501, f"Aerie verifies {' and '.join(SUPPORTED_PROOF_TYPES)}, not {data.get('proof_type')}")
        return 200, {"did": HOLDER_DID_MARKER}

    def credential_send_proposal(self, record_id, data):
        detail = json.loads(json.dumps(self.require_json_ld(data)))
        subject = (detail.get("credential") or {}).get("credentialSubject")
        if isinstance(subject, dict) and subject.get("id") == HOLDER_DID_MARKER:
            del subject["id"]
        connection_id = data.get("connection_id") or record_id
        if not connection_id:
            raise HTTPAnswer(400, "send-proposal needs connection_id")
        params = {"connectionId": connection_id, "detail": detail}
        if data.get("comment"):
            params["comment"] = data["comment"]
        return 200, self.exchange_info(self.rpc.call("credentials.propose", params))

    def credential_send_request(self, record_id, data):
        """The offer on the thread (waiting for it to arrive), accepted: credentials.accept."""
        view = self.credential_exchange(record_id, states=("offer-received", "abandoned"))
        if view.get("state") != "offer-received":
            raise HTTPAnswer(400, f"no offer to request on thread {record_id}: {view.get('state')} {view.get('problem') or ''}")
        return 200, self.exchange_info(self.rpc.call("credentials.accept", {"offerId": view["exchangeId"]}))

    def credential_store(self, record_id, data):
        """Aerie verifies, stores and acknowledges the credential when it arrives: wait until it has."""
        view = self.credential_exchange(record_id, states=("done", "abandoned"))
        if view.get("state") != "done":
            raise HTTPAnswer(400, f"no credential stored on thread {record_id}: {view.get('state')} {view.get('problem') or ''}")
        return 200, self.exchange_info(view)

    # --- present-proof v2 (RFC 0454), JSON-LD with DIF Presentation Exchange, Aerie as prover ---

    def proof_request(self, thread_id, seconds=WAIT_SECONDS):
        """The proof request on the verifier's thread, waiting up to `seconds` for it to arrive."""
        deadline = time.monotonic() + seconds
        while True:
            after = None
            while True:
                params = {"limit": 500}
                if after:
                    params["after"] = after
                page = self.rpc.call("proofs.list", params)
                for view in page.get("requests", []):
                    if view.get("threadId") == thread_id:
                        return view
                after = page.get("nextCursor")
                if not after:
                    break
            if time.monotonic() >= deadline:
                raise HTTPAnswer(404, f"no proof request on thread {thread_id}")
            time.sleep(POLL_SECONDS)

    @staticmethod
    def proof_info(view):
        return {
            "state": view["state"],
            "thread_id": view["threadId"],
            "pres_ex_id": view["requestId"],
            "connection_id": view.get("connectionId"),
            "aerie_request": view,
        }

    def proof_send_presentation(self, record_id, data):
        """`record_ids` ({descriptor id: [credential ids]}, the harness's credential ids being
        Aerie's credentialIds) chooses the credentials; without it the oldest matches are used."""
        if data.get("format") not in (None, "json-ld"):
            raise HTTPAnswer(501, f"Aerie presents JSON-LD credentials only, not {data.get('format')}")
        view = self.proof_request(record_id)
        selection = {d: ids[0] for d, ids in (data.get("record_ids") or {}).items() if ids}
        params = {"requestId": view["requestId"]}
        if selection:
            params["selection"] = selection
        presented = self.rpc.call("proofs.present", params)
        if presented.get("state") == "abandoned":
            raise HTTPAnswer(400, f"Aerie could not present: {presented.get('problem')}")
        return 200, self.proof_info(presented)

    def automatic_step(self, record_id, done, topic, what, repeated):
        """A step of the handshake Aerie takes on its own (answering the Request): wait until it
        has (state 3 on) and answer the record. Asked a second time for the same record, the
        step has nothing left to do: `repeated` is the (status, error, description) to answer."""
        with self.lock:
            if record_id in done:
                status, error, description = repeated
                view = self.connection(record_id)
                raise HTTPAnswer(status, json.dumps({
                    "error": error, "description": description, "state": self.state_name(view, topic),
                }))
        view = self.wait_for(record_id, lambda v: v.get("state") in (0, 3, 4, 5))
        if view.get("state") not in (3, 4, 5):
            raise HTTPAnswer(400, f"no {what} on {record_id}: state {view.get('stateName')} "
                                  f"{view.get('failureReason') or ''}".strip())
        with self.lock:
            done.add(record_id)
        return 200, self.info(view, topic)


class Handler(BaseHTTPRequestHandler):
    agent = None
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        log("http", fmt % args)

    def _send(self, status, body):
        text = body if isinstance(body, str) else json.dumps(body)
        payload = text.encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json" if not isinstance(body, str) else "text/plain")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def _parts(self):
        path = urllib.parse.urlsplit(self.path).path
        parts = [urllib.parse.unquote(p) for p in path.split("/") if p]
        if len(parts) < 3 or parts[0] != "agent" or parts[1] not in ("command", "response"):
            raise HTTPAnswer(404, f"unknown path {path}")
        return parts[1], parts[2], parts[3:]

    def _run(self, work):
        try:
            status, body = work()
        except HTTPAnswer as answer:
            status, body = answer.status, answer.body
        except RPCError as error:
            status = {-32004: 404, -32602: 400, -32009: 400, -32601: 501}.get(error.code, 500)
            if error.name and error.name.startswith("unsupported"):
                status = 501
            body = f"Aerie {error.name or error.code}: {error.message}"
        except Exception as error:  # noqa: BLE001  (answer the harness, log the cause)
            status, body = 500, f"{type(error).__name__}: {error}"
        if status != 200:
            log("answer", status, str(body)[:300])
        self._send(status, body)

    def do_GET(self):
        def work():
            kind, topic, rest = self._parts()
            if kind == "response":
                return self.agent.get_response(topic, rest[-1] if rest else None)
            operation = rest[0] if len(rest) == 2 else None
            record_id = rest[-1] if rest else None
            return self.agent.get_command(topic, record_id, operation)

        self._run(work)

    def do_POST(self):
        def work():
            length = int(self.headers.get("Content-Length") or 0)
            if length > 1 << 20:
                raise HTTPAnswer(413, "body too large")
            raw = self.rfile.read(length) if length else b""
            payload = json.loads(raw) if raw.strip() else {}
            if not isinstance(payload, dict):
                raise HTTPAnswer(400, "the body must be a JSON object")
            kind, topic, rest = self._parts()
            if kind != "command":
                raise HTTPAnswer(404, "POST only under /agent/command/")
            operation = rest[0] if rest else None
            record_id = payload.get("id") or (rest[1] if len(rest) > 1 else None)
            log("command", topic, operation, record_id or "", json.dumps(payload.get("data"))[:200])
            return self.agent.post_command(topic, operation, record_id, payload.get("data"))

        self._run(work)

    def do_DELETE(self):
        self._send(501, "DELETE (credentials) is not implemented for Aerie")


def main():
    parser = argparse.ArgumentParser(description="Aerie backchannel for the Aries Agent Test Harness")
    parser.add_argument("--port", type=int, default=9030, help="HTTP port the harness calls (9030)")
    parser.add_argument("--host", default="127.0.0.1", help="HTTP address (127.0.0.1)")
    parser.add_argument("--aerie", default="127.0.0.1:7400", help="Aerie JSON-RPC HOST:PORT (127.0.0.1:7400)")
    parser.add_argument("--token-file", help="file holding the tenant token (else AERIE_TOKEN)")
    parser.add_argument("--label", default="aerie", help="the label peers see")
    args = parser.parse_args()
    if args.token_file:
        with open(args.token_file) as handle:
            token = handle.read().strip()
    else:
        token = os.environ.get("AERIE_TOKEN", "").strip()
    if not token:
        parser.error("a tenant token is needed: --token-file or AERIE_TOKEN")
    host, _, port = args.aerie.rpartition(":")
    Handler.agent = AerieAgent(AerieRPC(host, int(port), token), args.label)
    server = ThreadingHTTPServer((args.host, args.port), Handler)
    log(f"Aerie backchannel for {args.label} on http://{args.host}:{args.port}, Aerie at {args.aerie}")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
