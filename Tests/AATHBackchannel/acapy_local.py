#!/usr/bin/env python3
"""Runs the harness's own ACA-Py backchannel (aries-backchannels/acapy) outside Docker, on loopback,
without a ledger: the connection, did-exchange, out-of-band and peer-DID features need none.

Run it with the Python of a venv holding acapy-agent and the backchannel's requirements, from the
harness's aries-backchannels folder (its modules import as `acapy.*` and `python.*`):

    cd HARNESS/aries-backchannels && VENV/bin/python acapy_local.py --port 9020

What it changes, all in memory (the harness files stay as fetched):
- no genesis transactions (the backchannel exits without them) and `--no-ledger` for ACA-Py;
- no `--plugin-config /data-mount/...` (a Docker mount) and no `--plugin X` that is not installed;
- every listener (backchannel, webhooks, ACA-Py admin and inbound) on 127.0.0.1, not 0.0.0.0;
- `aca-py` from this venv, its version from the installed package (the Docker image writes
  acapy-version.txt instead);
- `GET did` (the public DID of the `@DIDExchangeConnection` scenarios' explicit invitation): a
  did:peer:2 of ACA-Py's own endpoint made its public DID, instead of a did:sov registered on
  the ledger (von-network): it needs no ledger, and the invitee resolves it from the DID itself.
"""

import argparse
import asyncio
import importlib.util
import json
import os
import sys
from importlib import metadata

import aiohttp.web

HOST = "127.0.0.1"

_TCPSite = aiohttp.web.TCPSite


class LoopbackSite(_TCPSite):
    def __init__(self, runner, host=None, port=None, **kwargs):
        super().__init__(runner, HOST, port, **kwargs)


aiohttp.web.TCPSite = LoopbackSite

sys.path.insert(0, os.getcwd())
import acapy.acapy_backchannel as ab  # noqa: E402  (the harness's module, from the current folder)


async def _no_genesis():
    return "ledger-less"


ab.default_genesis_txns = _no_genesis
ab.DEFAULT_BIN_PATH = os.path.dirname(sys.executable)
ab.DEFAULT_PYTHON_PATH = ""

_init = ab.AcaPyAgentBackchannel.__init__


def _patched_init(self, *args, **kwargs):
    _init(self, *args, **kwargs)
    self.acapy_version = metadata.version("acapy-agent")
    self.external_host = HOST


ab.AcaPyAgentBackchannel.__init__ = _patched_init

_agent_args = ab.AcaPyAgentBackchannel.get_agent_args


def _installed(module):
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def _patched_agent_args(self):
    kept = []
    items = list(_agent_args(self))
    i = 0
    while i < len(items):
        item = items[i]
        if isinstance(item, tuple) and item and item[0] in ("--genesis-transactions", "--plugin-config"):
            i += 1
            continue
        if isinstance(item, tuple) and item and item[0] == "--admin":
            item = ("--admin", HOST, item[2])
        if item == "--plugin" and i + 1 < len(items):
            if not _installed(items[i + 1]):
                print(f"acapy_local: plugin {items[i + 1]} is not installed; left out", flush=True)
                i += 2
                continue
        kept.append(item)
        i += 1
    kept.append("--no-ledger")
    return kept


ab.AcaPyAgentBackchannel.get_agent_args = _patched_agent_args

_host_args = ab.AcaPyAgentBackchannel.get_host_args


def _patched_host_args(self, inbound_transports, outbound_transports):
    return [HOST if a == "0.0.0.0" else a for a in _host_args(self, inbound_transports, outbound_transports)]


ab.AcaPyAgentBackchannel.get_host_args = _patched_host_args


_get_request = ab.AcaPyAgentBackchannel.make_agent_GET_request


async def _patched_get_request(self, command):
    if command.topic != "did":
        return await _get_request(self, command)
    status, text = await self.admin_GET("/wallet/did/public")
    if status == 200 and json.loads(text).get("result"):
        return status, json.dumps(json.loads(text)["result"])
    status, text = await self.admin_POST("/wallet/did/create", {"method": "did:peer:2"})
    if status != 200:
        return status, text
    did = json.loads(text)["result"]["did"]
    status, text = await self.admin_POST("/wallet/did/public", {}, params={"did": did})
    if status != 200:
        return status, text
    self.did = did
    return status, json.dumps(json.loads(text)["result"])


ab.AcaPyAgentBackchannel.make_agent_GET_request = _patched_get_request


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="The harness's ACA-Py backchannel on loopback, without a ledger.")
    parser.add_argument("--port", type=int, default=9020, help="backchannel port; ACA-Py uses the next four")
    args = parser.parse_args()
    os.environ.setdefault("AGENT_PUBLIC_ENDPOINT", f"http://{HOST}:{args.port + 1}")
    try:
        asyncio.new_event_loop().run_until_complete(ab.main(start_port=args.port, interactive=False))
    except KeyboardInterrupt:
        os._exit(1)
