#!/usr/bin/env python3
"""Out-of-band connection reuse (RFC 0434 handshake-reuse) through the two backchannels, Aerie the
invitee and ACA-Py the inviter. The harness's own reuse steps need a public DID on a ledger
(T012-RFC0023 is not even defined); this check uses an ACA-Py did:peer:2 instead (`use_did`,
which the harness's ACA-Py backchannel passes through), with the harness's backchannel calls:

1. ACA-Py: out-of-band/send-invitation-message {use_did}; Aerie: out-of-band/receive-invitation,
   did-exchange/send-request; ACA-Py: did-exchange/send-response; both `completed`.
2. ACA-Py: a second invitation with the same DID; Aerie: out-of-band/receive-invitation with
   use_existing_connection: answers `completed` on the same connection (Aerie state 5, reused),
   and ACA-Py finds its active connection to Aerie's DID (active-connection), as the harness's
   setup_already_connected does.

    python3 reuse_check.py --acapy http://127.0.0.1:9020 --aerie http://127.0.0.1:9030
Exit 0 when every check holds.
"""

import argparse
import json
import sys
import time
import urllib.error
import urllib.request

DIDEXCHANGE_11 = "https://didcomm.org/didexchange/1.1"


def call(method, url, body=None):
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=90) as answer:
            text = answer.read().decode()
            return answer.status, json.loads(text) if text.strip() else {}
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def state(base, topic, connection_id):
    status, body = call("GET", f"{base}/agent/command/{topic}/{connection_id}")
    return body.get("state") if status == 200 else f"HTTP {status}"


def wait_state(base, topic, connection_id, wanted, seconds=30):
    deadline = time.monotonic() + seconds
    current = state(base, topic, connection_id)
    while current != wanted and time.monotonic() < deadline:
        time.sleep(0.5)
        current = state(base, topic, connection_id)
    return current


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--acapy", default="http://127.0.0.1:9020", help="ACA-Py backchannel (its admin API is port + 2)")
    parser.add_argument("--aerie", default="http://127.0.0.1:9030", help="Aerie backchannel")
    args = parser.parse_args()
    acapy, aerie = args.acapy.rstrip("/"), args.aerie.rstrip("/")
    host, port = acapy.rsplit(":", 1)
    admin = f"{host}:{int(port) + 2}"
    failures = []

    def check(ok, what):
        print(("ok   " if ok else "FAIL ") + what, flush=True)
        if not ok:
            failures.append(what)
        return ok

    status, made = call("POST", f"{admin}/wallet/did/create", {"method": "did:peer:2"})
    if not check(status == 200, f"ACA-Py made a did:peer:2 ({status})"):
        return 1
    did = made["result"]["did"]
    invite = {"data": {"use_did": did, "handshake_protocols": [DIDEXCHANGE_11]}}

    status, first = call("POST", f"{acapy}/agent/command/out-of-band/send-invitation-message/", invite)
    if not check(status == 200, f"ACA-Py invitation 1 ({status})"):
        return 1
    invitation = first["invitation"]
    status, received = call("POST", f"{aerie}/agent/command/out-of-band/receive-invitation/",
                            {"data": dict(invitation, use_existing_connection=False)})
    if not check(status == 200 and received.get("state") == "invitation-received",
                 f"Aerie received invitation 1: {status} {received if status != 200 else received.get('state')}"):
        return 1
    aerie_id = received["connection_id"]
    status, sent = call("POST", f"{aerie}/agent/command/did-exchange/send-request/", {"id": aerie_id, "data": {}})
    check(status == 200, f"Aerie sent the request: {status} {sent if status != 200 else sent.get('state')}")
    status, webhook = call("GET", f"{acapy}/agent/response/did-exchange/{invitation['@id']}")
    acapy_id = webhook.get("connection_id") if isinstance(webhook, dict) else None
    if not check(bool(acapy_id), "ACA-Py has the request's connection"):
        return 1
    status, _ = call("POST", f"{acapy}/agent/command/did-exchange/send-response/", {"id": acapy_id, "data": {}})
    check(status == 200, f"ACA-Py sent the response ({status})")
    check(wait_state(aerie, "did-exchange", aerie_id, "completed") == "completed", "Aerie: completed")
    check(wait_state(acapy, "did-exchange", acapy_id, "completed") == "completed", "ACA-Py: completed")

    status, second = call("POST", f"{acapy}/agent/command/out-of-band/send-invitation-message/", invite)
    if not check(status == 200, f"ACA-Py invitation 2, same DID ({status})"):
        return 1
    status, reused = call("POST", f"{aerie}/agent/command/out-of-band/receive-invitation/",
                          {"data": dict(second["invitation"], use_existing_connection=True)})
    if not check(status == 200, f"Aerie received invitation 2 with use_existing_connection ({status} {reused if status != 200 else ''})"):
        return 1
    check(reused.get("state") == "completed", f"answered completed (got {reused.get('state')})")
    check(reused.get("connection_id") == aerie_id, "on the same connection (no second handshake)")
    check(reused.get("aerie_state_name") == "reused", f"Aerie state reused (got {reused.get('aerie_state_name')})")
    status, active = call("GET", f"{acapy}/agent/command/active-connection/{reused.get('my_did')}")
    check(status == 200 and active.get("connection_id") == acapy_id,
          f"ACA-Py's active connection to Aerie's DID is the first one ({status})")
    status, listed = call("GET", f"{admin}/connections")
    count = sum(1 for c in listed.get("results", []) if c.get("their_did") == reused.get("my_did")) if status == 200 else -1
    check(count == 1, f"ACA-Py has one connection with Aerie's DID (got {count})")
    print("reuse check:", "passed" if not failures else f"{len(failures)} failed")
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
