#!/usr/bin/env python3
"""Independent DIDComm v1 peer for Aerie's interop tests: ACA-Py's own code does the work.

Reads one JSON array of operations on stdin and writes one JSON array of results on stdout.
Keys come from 32-character seeds (ACA-Py's `seed` convention); seeds and private keys are
never written out. Operations:

  {"op": "verkey", "seed": S}                          -> {"verkey": B58}
  {"op": "pack", "message": TEXT, "to": [B58...], "sender_seed": S|null, "routing_keys": [B58...]}
                                                       -> {"envelope": TEXT}
  {"op": "unpack", "envelope": TEXT, "seeds": [S...]}  -> {"layers": [{"message", "sender_verkey",
                                                          "recipient_verkey"}...]}  (forwards are
                                                          followed, outermost layer first)
  {"op": "sign", "value": JSON, "seed": S}             -> {"decorator": {...}}
  {"op": "verify", "decorator": {...}}                 -> {"valid": bool, "value": JSON, "signer": B58}
  {"op": "resolve_peer2", "did": DID}                  -> {"document": DIDDoc}  (did_peer_2 package)
Any failing operation yields {"error": "..."} in its place.
"""

import asyncio
import json
import logging
import sys

logging.disable(logging.CRITICAL)

import did_peer_2  # noqa: E402
from acapy_agent.messaging.decorators.signature_decorator import SignatureDecorator  # noqa: E402
from acapy_agent.protocols.routing.v1_0.messages.forward import Forward  # noqa: E402
from acapy_agent.transport.pack_format import PackWireFormat  # noqa: E402
from acapy_agent.utils.testing import create_test_profile  # noqa: E402
from acapy_agent.wallet.base import BaseWallet  # noqa: E402
from acapy_agent.wallet.key_type import ED25519  # noqa: E402

FORWARD_TYPES = (
    "https://didcomm.org/routing/1.0/forward",
    "did:sov:BzCbsNYhMrjHiqZDTUASHg;spec/routing/1.0/forward",
)


async def ensure_key(wallet, seed, cache):
    if seed not in cache:
        info = await wallet.create_signing_key(ED25519, seed=seed)
        cache[seed] = info.verkey
    return cache[seed]


async def run(op, session, wallet, cache):
    kind = op["op"]
    if kind == "verkey":
        return {"verkey": await ensure_key(wallet, op["seed"], cache)}
    if kind == "pack":
        sender = op.get("sender_seed")
        sender_vk = await ensure_key(wallet, sender, cache) if sender else None
        routing = op.get("routing_keys") or []
        if sender_vk:
            # ACA-Py's own outbound path, forward wrapping included.
            packed = await PackWireFormat().pack(
                session, op["message"], op["to"], routing, sender_vk
            )
        else:
            # Anoncrypt: the same loop as PackWireFormat.pack, which needs a sender.
            packed = await wallet.pack_message(op["message"], op["to"], None)
            recip_keys = op["to"]
            for router_key in routing:
                fwd = Forward(to=recip_keys[0], msg=json.loads(packed.decode("utf-8")))
                recip_keys = [router_key]
                packed = await wallet.pack_message(fwd.to_json(), recip_keys)
        return {"envelope": packed.decode("utf-8")}
    if kind == "unpack":
        for seed in op.get("seeds", []):
            await ensure_key(wallet, seed, cache)
        layers = []
        envelope = op["envelope"]
        while True:
            message, sender_vk, recip_vk = await wallet.unpack_message(
                envelope.encode("utf-8")
            )
            layers.append(
                {"message": message, "sender_verkey": sender_vk, "recipient_verkey": recip_vk}
            )
            parsed = json.loads(message)
            if parsed.get("@type") in FORWARD_TYPES:
                fwd = Forward.deserialize(parsed)
                envelope = json.dumps(fwd.msg)
                continue
            break
        return {"layers": layers}
    if kind == "sign":
        signer = await ensure_key(wallet, op["seed"], cache)
        deco = await SignatureDecorator.create(op["value"], signer, wallet)
        return {"decorator": deco.serialize()}
    if kind == "verify":
        deco = SignatureDecorator.deserialize(op["decorator"])
        valid = await deco.verify(wallet)
        value, _timestamp = deco.decode() if valid else (None, None)
        return {"valid": valid, "value": value, "signer": deco.signer}
    if kind == "resolve_peer2":
        return {"document": did_peer_2.resolve(op["did"])}
    raise ValueError(f"unknown op {kind}")


async def main():
    ops = json.load(sys.stdin)
    profile = await create_test_profile()
    results = []
    cache = {}
    async with profile.session() as session:
        wallet = session.inject(BaseWallet)
        for op in ops:
            try:
                results.append(await run(op, session, wallet, cache))
            except Exception as e:  # report, never crash: the Swift test shows it
                results.append({"error": f"{type(e).__name__}: {e}"})
    await profile.close()
    json.dump(results, sys.stdout)


if __name__ == "__main__":
    asyncio.run(main())
