"""Checks lanchat records with code lanchat did not write: cbor2 decodes them and re-encodes
them canonically to the same bytes, PyNaCl verifies their Ed25519 signatures, hashlib gives the
same BLAKE2b-256 ids. Input: Protocol.md's vectors and a real export stream.

Usage: python records_interop.py PROTOCOL_MD EXPORT_FILE
"""
import hashlib
import re
import sys

import cbor2
from nacl.exceptions import BadSignatureError
from nacl.signing import VerifyKey

from tally import Tally

DOMAIN = b"lanchat/record/v1\x00"
tally = Tally("records interop")
check = tally.check


def check_record(name, data, expected_id=None):
    record = cbor2.loads(data)
    check(f"{name}: six fields", isinstance(record, list) and len(record) == 6)
    version, kind, author, clock, body, signature = record
    check(f"{name}: canonical", cbor2.dumps(record, canonical=True) == data)
    unsigned = cbor2.dumps([version, kind, author, clock, body], canonical=True)
    check(f"{name}: unsigned bytes rule", unsigned == b"\x85" + data[1:-66])
    try:
        VerifyKey(author).verify(DOMAIN + unsigned, signature)
        check(f"{name}: signature", True)
    except BadSignatureError:
        check(f"{name}: signature", False)
    digest = hashlib.blake2b(data, digest_size=32).hexdigest()
    if expected_id:
        check(f"{name}: id", digest == expected_id)
    tampered = bytearray(unsigned)
    tampered[-1] ^= 1
    try:
        VerifyKey(author).verify(DOMAIN + bytes(tampered), signature)
        check(f"{name}: tampered refused", False)
    except BadSignatureError:
        check(f"{name}: tampered refused", True)


def vectors(path):
    text = open(path, encoding="utf-8").read()
    for block in re.findall(r"```vector\n(.*?)```", text, re.S):
        fields, key = {}, None
        for line in block.splitlines():
            if line.startswith("  ") and key:
                fields[key] += line.strip()
            elif ":" in line:
                key, value = line.split(":", 1)
                fields[key] = value.strip()
        yield fields


def frames(stream):
    assert stream[:16] == b"lanchat-export\x00\x01", "bad magic"
    offset, out = 16, []
    while True:
        length = int.from_bytes(stream[offset:offset + 4], "big")
        offset += 4
        if length == 0:
            break
        out.append(stream[offset:offset + length])
        offset += length
    assert int.from_bytes(stream[offset:offset + 8], "big") == len(out)
    return out


for v in vectors(sys.argv[1]):
    if v.get("kind") == "record":
        check_record(v["name"], bytes.fromhex(v["record"]), v["id"])
for i, data in enumerate(frames(open(sys.argv[2], "rb").read())):
    check_record(f"export #{i + 1}", data)

sys.exit(tally.finish())
