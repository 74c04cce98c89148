"""A hostile member, written from Protocol.md alone with libraries lanchat did not write (cbor2,
PyNaCl, hashlib): it reads a victim's records from an export stream and signs, with its own key,
records that try to take over, edit or delete the victim's messages, profile and files, with
clocks far earlier, one tick earlier, equal, one tick later and near the drift bound. It also
signs one harmless write in the open zone, the probe, so a test can tell that its records were
accepted and merged.

Usage: python hostile_member.py VICTIM_EXPORT ATTACK_EXPORT NOW_MS
Prints the number of records written to ATTACK_EXPORT.
"""
import hashlib
import struct
import sys

import cbor2
from nacl.signing import SigningKey

MAGIC = b"lanchat-export\x00\x01"
DOMAIN = b"lanchat/record/v1\x00"


def read_export(path):
    data = open(path, "rb").read()
    assert data.startswith(MAGIC), "not an export stream"
    at, records = len(MAGIC), []
    while True:
        (length,) = struct.unpack(">I", data[at:at + 4])
        at += 4
        if length == 0:
            (count,) = struct.unpack(">Q", data[at:at + 8])
            assert count == len(records) and at + 8 == len(data)
            return records
        records.append(cbor2.loads(data[at:at + length]))
        at += length


def write_export(path, encoded):
    with open(path, "wb") as out:
        out.write(MAGIC)
        for record in encoded:
            out.write(struct.pack(">I", len(record)) + record)
        out.write(struct.pack(">IQ", 0, len(encoded)))


def sign(key, kind, clock, body):
    author = bytes(key.verify_key)
    unsigned = cbor2.dumps([1, kind, author, clock, body], canonical=True)
    signature = key.sign(DOMAIN + unsigned).signature
    return cbor2.dumps([1, kind, author, clock, body, signature], canonical=True)


def main():
    victim_path, attack_path, now_ms = sys.argv[1], sys.argv[2], int(sys.argv[3])
    victim = read_export(victim_path)
    key = SigningKey(bytes([0x4D]) * 32)
    me = __import__("base64").urlsafe_b64encode(bytes(key.verify_key)).rstrip(b"=").decode()

    messages, profiles, files = {}, {}, {}
    for version, kind, author, clock, body, signature in victim:
        if kind == 1:
            for path, value in body:
                parts = path.split("/")
                if len(parts) >= 5 and parts[1] == "conversations" and parts[3] == "messages":
                    messages.setdefault("/".join(parts[:5]), clock)
                elif len(parts) >= 3 and parts[1] == "users":
                    profiles.setdefault("/".join(parts[:3]), clock)
        elif kind == 3:
            files.setdefault(body[0], clock)
    assert messages and profiles and files, "the victim's export lacks a message, a profile or a file"

    def clocks(victim_clock):
        return [1 << 16, victim_clock - 1, victim_clock, victim_clock + 1, (now_ms + 240_000) << 16]

    content = b"not the victim's picture"
    blob = hashlib.blake2b(content, digest_size=32).digest()
    manifest = sign(key, 2, now_ms << 16, [blob, len(content), "image/png", 65536, [blob]])
    manifest_id = hashlib.blake2b(manifest, digest_size=32).digest()
    out = [manifest]
    for path, first in messages.items():
        for clock in clocks(first):
            out.append(sign(key, 1, clock, [[path, {"senderId": me, "senderName": "Alice", "text": "evil"}]]))
            out.append(sign(key, 1, clock, [[path, None]]))
            out.append(sign(key, 1, clock, [[path + "/text", "evil"]]))
            out.append(sign(key, 1, clock, [[path + "/senderId", me]]))
    for path, first in profiles.items():
        for clock in clocks(first):
            out.append(sign(key, 1, clock, [[path, {"first_name": "Mallory"}]]))
            out.append(sign(key, 1, clock, [[path + "/first_name", "Mallory"]]))
            out.append(sign(key, 1, clock, [[path, None]]))
        out.append(sign(key, 1, (now_ms + 240_000) << 16, [["/users", None]]))
    for path, first in files.items():
        for clock in clocks(first):
            out.append(sign(key, 3, clock, [path, manifest_id]))
            out.append(sign(key, 3, clock, [path, None]))
    out.append(sign(key, 1, now_ms << 16, [["/hostile/probe", "accepted"]]))
    out = list(dict.fromkeys(out))  # signing is deterministic: equal attempts are one record
    write_export(attack_path, out)
    print(len(out))


main()
