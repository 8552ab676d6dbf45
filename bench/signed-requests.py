#!/usr/bin/env python3
"""Pre-signed Web Bot Auth requests for the load test's charge rows.

  bench/signed-requests.py SEED AUTHORITY COUNT PREFIX > requests.tsv
  bench/signed-requests.py SEED --jwk

Each line is `target<TAB>signature-input<TAB>signature` for a GET of
`/small.html?PREFIX-N` with `crawler-max-price: USD 1`, signed with the
Ed25519 key derived from SEED (RFC 9421: @authority, @method, @path,
@query and crawler-max-price covered, tag="web-bot-auth", valid for an
hour). Every line is a different signature, so the replay cache lets each
through once. Needs the `cryptography` package.
"""
import base64
import hashlib
import json
import sys
import time

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat


def b64url(b):
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()


def main():
    seed = int(sys.argv[1])
    key = Ed25519PrivateKey.from_private_bytes(bytes([seed]) * 32)
    x = b64url(key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw))
    if sys.argv[2] == "--jwk":
        print(json.dumps({"kty": "OKP", "crv": "Ed25519", "x": x}, separators=(",", ":")))
        return
    authority, count, prefix = sys.argv[2], int(sys.argv[3]), sys.argv[4]
    thumb = b64url(hashlib.sha256(('{"crv":"Ed25519","kty":"OKP","x":"%s"}' % x).encode()).digest())
    created = int(time.time()) - 5
    params = ('("@authority" "@method" "@path" "@query" "crawler-max-price");created=%d;expires=%d;'
              'keyid="%s";alg="ed25519";tag="web-bot-auth"' % (created, created + 3600, thumb))
    out = []
    for n in range(count):
        query = "?%s-%d" % (prefix, n)
        base = ('"@authority": %s\n"@method": GET\n"@path": /small.html\n"@query": %s\n'
                '"crawler-max-price": USD 1\n"@signature-params": %s' % (authority, query, params))
        sig = base64.b64encode(key.sign(base.encode())).decode()
        out.append("/small.html%s\tsig1=%s\tsig1=:%s:\n" % (query, params, sig))
    sys.stdout.write("".join(out))


main()
