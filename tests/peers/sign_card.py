"""Signs an agent card the way a worker would, for tests/it/signed_cards.rs.

Reads the card (JSON) on stdin and writes the signed card, as it would be served, on stdout.

    sign_card.py sdk  ALG KEY.pem KID [JKU]   a2a-sdk's own signer (a2a.utils.signing) over the
                                             card as its AgentCard type holds it, served the way
                                             the SDK's server serves it (v0.3 fields merged in)
    sign_card.py spec ALG KEY.pem KID [JKU]   a JWS (PyJWT) over the RFC 8785 form (rfc8785) of
                                             the card as given, minus "signatures" (A2A v1 8.4)
"""

import json
import sys

import jwt
import rfc8785


def main() -> None:
    mode, alg, key_file, kid = sys.argv[1:5]
    jku = sys.argv[5] if len(sys.argv) > 5 else None
    key = open(key_file, "rb").read()
    header = {"alg": alg, "kid": kid, "typ": "JOSE"}
    if jku:
        header["jku"] = jku
    card = json.load(sys.stdin)
    if mode == "sdk":
        from google.protobuf.json_format import ParseDict

        from a2a.server.request_handlers.response_helpers import agent_card_to_dict
        from a2a.types import AgentCard
        from a2a.utils.signing import create_agent_card_signer

        proto = ParseDict(card, AgentCard(), ignore_unknown_fields=True)
        signed = create_agent_card_signer(key, header)(proto)
        out = agent_card_to_dict(signed)
    elif mode == "spec":
        unsigned = {k: v for k, v in card.items() if k != "signatures"}
        token = jwt.api_jws.encode(rfc8785.dumps(unsigned), key, algorithm=alg, headers=header)
        protected, _, signature = token.split(".")
        out = dict(card, signatures=[{"protected": protected, "signature": signature}])
    else:
        sys.exit(f"unknown mode {mode!r}: sdk or spec")
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
