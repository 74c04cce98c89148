#!/usr/bin/env python3
"""Reads private conversations (Protocol.md §11) out of an export stream (§4) with code lanchat
did not write: cbor2 for the records, PyNaCl for signatures, sealed boxes, the X25519 form of an
identity and XChaCha20-Poly1305, hashlib for BLAKE2b.

    private_interop.py STREAM KEYFILE TEXT            a member's key: some sealed write opens
                                                      and a message says TEXT; exit 0
    private_interop.py STREAM KEYFILE TEXT --outsider a non-member's key: no box, meta or
                                                      sealed write opens, TEXT is nowhere; exit 0
    private_interop.py STREAM KEYFILE TEXT --cannot-read  a former member's key: whatever else
                                                      opens, no message saying TEXT does; exit 0

KEYFILE is a node's key file (the 32-byte Ed25519 seed). Prints what it found; exits 1 otherwise.
"""
import hashlib
import struct
import sys

import cbor2
import nacl.bindings
import nacl.public
from nacl.exceptions import BadSignatureError, CryptoError
from nacl.signing import SigningKey, VerifyKey

MAGIC = b"lanchat-export\x00\x01"
RECORD_DOMAIN = b"lanchat/record/v1\x00"
META_LABEL = b"lanchat/group-meta/v1"
WRITE_LABEL = b"lanchat/sealed-write/v1"


def records(stream):
    if not stream.startswith(MAGIC):
        sys.exit("not an export stream")
    offset, out = len(MAGIC), []
    while True:
        (length,) = struct.unpack(">I", stream[offset:offset + 4])
        offset += 4
        if length == 0:
            break
        out.append(stream[offset:offset + length])
        offset += length
    return out


def verified(data):
    record = cbor2.loads(data)
    version, kind, author, clock, body, signature = record
    unsigned = b"\x85" + data[1:-66]
    VerifyKey(author).verify(RECORD_DOMAIN + unsigned, signature)
    return kind, author, clock, body, hashlib.blake2b(data, digest_size=32).digest()


def subkey(key, label):
    return hashlib.blake2b(label, digest_size=32, key=key).digest()


def xopen(key, sealed, ad):
    try:
        return nacl.bindings.crypto_aead_xchacha20poly1305_ietf_decrypt(sealed[24:], ad, sealed[:24], key)
    except CryptoError:
        return None


def main():
    stream_path, key_path, text = sys.argv[1:4]
    outsider = "--outsider" in sys.argv[4:]
    former = "--cannot-read" in sys.argv[4:]
    stream = open(stream_path, "rb").read()
    seed = open(key_path, "rb").read()
    signing = SigningKey(seed)
    device = nacl.public.PrivateKey(nacl.bindings.crypto_sign_ed25519_sk_to_curve25519(seed + bytes(signing.verify_key)))
    unsealer = nacl.public.SealedBox(device)

    epochs, writes, opened_meta = {}, [], 0
    for data in records(stream):
        try:
            kind, author, clock, body, rid = verified(data)
        except (BadSignatureError, ValueError) as exc:
            sys.exit(f"a record does not verify: {exc}")
        if kind == 5:
            cid, epoch, _salt, boxes, meta = body
            for box in boxes:
                try:
                    key = unsealer.decrypt(box)
                except CryptoError:
                    continue
                ad = META_LABEL + b"\x00" + cid.encode() + struct.pack(">Q", epoch) + author
                plain = xopen(subkey(key, META_LABEL), meta, ad)
                if plain is not None:
                    opened_meta += 1
                    title, members = cbor2.loads(plain)[:2]
                    print(f"epoch {epoch} of {cid}: {title!r}, {len(members)} members")
                    epochs[rid] = key
        elif kind == 6:
            writes.append((author, body))

    found, opened = False, 0
    for author, (cid, epoch_id, sealed) in writes:
        key = epochs.get(epoch_id)
        if key is None:
            continue
        ad = WRITE_LABEL + b"\x00" + cid.encode() + epoch_id + author
        padded = xopen(subkey(key, WRITE_LABEL), sealed, ad)
        if padded is None:
            continue
        opened += 1
        end = padded.rstrip(b"\x00")
        assert end.endswith(b"\x80"), "padding is not ISO/IEC 7816-4"
        for path, value in cbor2.loads(end[:-1]):
            if isinstance(value, dict) and value.get("text") == text:
                found = True
                print(f"{path}: {value['text']!r} from {value.get('senderId')}")
    print(f"{len(writes)} sealed writes, {opened} opened, {opened_meta} key records opened")
    if former:
        ok = not found
        print("the former member cannot read it" if ok else "FAIL: a former member read the message")
    elif outsider:
        ok = opened == 0 and opened_meta == 0 and text.encode() not in stream
        print("outsider reads nothing" if ok else "FAIL: an outsider read something")
    else:
        ok = found
        print("member reads the message" if ok else "FAIL: the message was not found")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
