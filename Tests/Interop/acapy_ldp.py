#!/usr/bin/env python3
"""Independent Linked Data proof peer for Aerie's tests: ACA-Py 1.2.7's own ld_proofs and PyLD 2.0.4.

Reads one JSON array of operations on stdin and writes one JSON array of results on stdout.
Contexts come only from ACA-Py's own static set and its test contexts (citizenship, examples,
ODRL); an unknown URL fails the operation, nothing is fetched. did:key documents come from
ACA-Py's resolver. Keys come from 32-character seeds; seeds are never written out. Operations:

  {"op": "canonize", "document": JSON}                  -> {"nquads": TEXT}  (PyLD URDNA2015;
                                                          "document_text": TEXT keeps 5.0 a float)
  {"op": "sign", "document": JSON, "suite": "Ed25519Signature2018"|"Ed25519Signature2020",
   "seed": S, "purpose": "assertionMethod"|"authentication", "challenge": C?, "domain": D?,
   "created": "2024-01-02T03:04:05Z"}                   -> {"document": JSON, "verification_method": VM}
  {"op": "verify", "document": JSON, "purpose": ..., "challenge": C?, "domain": D?}
                                                        -> {"verified": bool, "errors": [TEXT...]}
  {"op": "bench", "document": JSON, "seed": S, "suite": ..., "seconds": N,
   "present": {"credential": JSON, "seed": S, "challenge": C, "domain": D, "submission": JSON}?}
                                                        -> {"sign_per_second": X, "verify_per_second": Y,
                                                            "present_per_second": Z?, "..._cpu_us": CPU per op}
    (present: ACA-Py's create_presentation and sign_presentation over the credential, with the
    holder and the DIF submission added as its DIF prover adds them)
Any failing operation yields {"error": "..."} in its place.
"""

import asyncio
import glob
import json
import os
import logging
import sys
import time
from datetime import datetime

logging.disable(logging.CRITICAL)

from pyld import jsonld  # noqa: E402

from acapy_agent.did.did_key import DIDKey  # noqa: E402
from acapy_agent.resolver.default.key import KeyDIDResolver  # noqa: E402
from acapy_agent.resolver.did_resolver import DIDResolver  # noqa: E402
from acapy_agent.utils.testing import create_test_profile  # noqa: E402
from acapy_agent.vc.ld_proofs import (  # noqa: E402
    AuthenticationProofPurpose,
    CredentialIssuancePurpose,
    Ed25519Signature2018,
    Ed25519Signature2020,
    WalletKeyPair,
    sign,
    verify,
)
from acapy_agent.vc.ld_proofs.document_downloader import StaticCacheJsonLdDownloader  # noqa: E402
from acapy_agent.vc.ld_proofs.document_loader import DocumentLoader  # noqa: E402
from acapy_agent.vc.vc_ld.prove import create_presentation, sign_presentation  # noqa: E402
from acapy_agent.vc.tests.contexts import CITIZENSHIP_V1, EXAMPLES_V1, ODRL  # noqa: E402
from acapy_agent.wallet.base import BaseWallet  # noqa: E402
from acapy_agent.wallet.key_type import ED25519  # noqa: E402

ED25519_2020_URL = "https://w3id.org/security/suites/ed25519-2020/v1"
SUITES = {"Ed25519Signature2018": Ed25519Signature2018, "Ed25519Signature2020": Ed25519Signature2020}
EXTRA_CONTEXTS = {
    "https://w3id.org/citizenship/v1": CITIZENSHIP_V1,
    "https://www.w3.org/2018/credentials/examples/v1": EXAMPLES_V1,
    "https://www.w3.org/ns/odrl.jsonld": ODRL,
}

# Credentials v2 is in ACA-Py 1.7.0's static set (1.2.7 predates it).
_HERE = os.path.dirname(os.path.abspath(__file__))
for _path in glob.glob(os.path.join(_HERE, "../../.interop/venv-1.7.0/lib/python*/site-packages/acapy_agent/"
                                    "vc/ld_proofs/resources/credentials_v2_context.jsonld")):
    with open(_path) as _file:
        EXTRA_CONTEXTS["https://www.w3.org/ns/credentials/v2"] = json.load(_file)


class OfflineLoader:
    """ACA-Py's loader for did: URLs and its static contexts; the test contexts; nothing fetched."""

    def __init__(self, profile):
        self.did_loader = DocumentLoader(profile)
        self.static = StaticCacheJsonLdDownloader()

    def __call__(self, url, options=None):
        if url.startswith("did:"):
            return self.did_loader(url, options or {})
        if url in self.static.cache:
            return self.static.cache[url]
        if url in EXTRA_CONTEXTS:
            return {"contentType": "application/ld+json", "contextUrl": None, "documentUrl": url,
                    "document": EXTRA_CONTEXTS[url]}
        raise ValueError(f"context not available offline: {url}")


def purpose_of(op):
    if op.get("purpose") == "authentication":
        return AuthenticationProofPurpose(challenge=op.get("challenge"), domain=op.get("domain"))
    return CredentialIssuancePurpose()


async def main():
    operations = json.load(sys.stdin)
    profile = await create_test_profile()
    profile.context.injector.bind_instance(DIDResolver, DIDResolver([KeyDIDResolver()]))
    loader = OfflineLoader(profile)
    keys = {}

    async def key_for(seed):
        if seed not in keys:
            async with profile.session() as session:
                info = await session.inject(BaseWallet).create_signing_key(key_type=ED25519, seed=seed)
            keys[seed] = info.verkey
        verkey = keys[seed]
        return verkey, DIDKey.from_public_key_b58(verkey, ED25519).key_id

    async def suite_for(op):
        verkey, method = await key_for(op["seed"])
        suite = SUITES[op["suite"]](
            verification_method=method,
            key_pair=WalletKeyPair(profile=profile, key_type=ED25519, public_key_base58=verkey),
            date=datetime.fromisoformat(op["created"].replace("Z", "+00:00")) if op.get("created") else None,
        )
        return suite, method

    async def presented(op, present):
        """A DIF presentation as ACA-Py's prover makes one, signed by the holder."""
        holder_verkey, _ = await key_for(present["seed"])
        suite, _ = await suite_for({"seed": present["seed"], "suite": op["suite"]})
        presentation = await create_presentation(credentials=[present["credential"]])
        presentation["holder"] = DIDKey.from_public_key_b58(holder_verkey, ED25519).did
        presentation["@context"].append("https://identity.foundation/presentation-exchange/submission/v1")
        presentation["type"].append("PresentationSubmission")
        presentation["presentation_submission"] = present["submission"]
        return await sign_presentation(presentation=presentation, suite=suite, document_loader=loader,
                                       challenge=present["challenge"], domain=present["domain"])

    async def signed(op):
        suite, method = await suite_for(op)
        document = json.loads(json.dumps(op["document"]))
        # As ACA-Py's VcLdpManager does before signing with the 2020 suite.
        if op["suite"] == "Ed25519Signature2020" and ED25519_2020_URL not in document.get("@context", []):
            document["@context"] = list(document.get("@context", [])) + [ED25519_2020_URL]
        document = await sign(document=document, suite=suite,
                              purpose=purpose_of(op), document_loader=loader)
        return document, method

    async def verified(op):
        suites = [cls(key_pair=WalletKeyPair(profile=profile, key_type=ED25519)) for cls in SUITES.values()]
        result = await verify(document=op["document"], suites=suites, purpose=purpose_of(op),
                              document_loader=loader)
        errors = [str(e) for e in (result.errors or [])]
        for item in result.results or []:
            if item.error:
                errors.append(str(item.error))
            if item.purpose_result and item.purpose_result.error:
                errors.append(str(item.purpose_result.error))
        return {"verified": bool(result.verified), "errors": errors}

    results = []
    for op in operations:
        try:
            if op["op"] == "canonize":
                document = json.loads(op["document_text"]) if "document_text" in op else op["document"]
                nquads = jsonld.normalize(document, {"algorithm": "URDNA2015",
                                          "format": "application/n-quads", "documentLoader": loader})
                results.append({"nquads": nquads})
            elif op["op"] == "sign":
                document, method = await signed(op)
                results.append({"document": document, "verification_method": method})
            elif op["op"] == "verify":
                results.append(await verified(op))
            elif op["op"] == "bench":
                seconds = float(op.get("seconds", 2))
                result = {}

                async def measure(name, body):
                    count, start, cpu = 0, time.perf_counter(), time.process_time()
                    while time.perf_counter() - start < seconds:
                        await body()
                        count += 1
                    result[f"{name}_per_second"] = count / (time.perf_counter() - start)
                    result[f"{name}_cpu_us"] = (time.process_time() - cpu) / count * 1e6

                document = (await signed({**op, "purpose": "assertionMethod"}))[0]

                async def sign_once():
                    await signed({**op, "purpose": "assertionMethod"})

                async def verify_once():
                    outcome = await verified({"document": document, "purpose": "assertionMethod"})
                    assert outcome["verified"], outcome

                await measure("sign", sign_once)
                await measure("verify", verify_once)
                if "present" in op:
                    present = op["present"]
                    sample = await presented(op, present)
                    outcome = await verified({"document": sample, "purpose": "authentication",
                                              "challenge": present["challenge"], "domain": present["domain"]})
                    assert outcome["verified"], outcome

                    async def present_once():
                        await presented(op, present)

                    await measure("present", present_once)
                results.append(result)
            else:
                results.append({"error": f"unknown op {op['op']}"})
        except Exception as error:  # noqa: BLE001 - every failure is reported to the test
            results.append({"error": f"{type(error).__name__}: {error}"})
    json.dump(results, sys.stdout)


asyncio.run(main())
