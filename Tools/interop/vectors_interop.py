#!/usr/bin/env python3
"""Checks every vector of Protocol.md §10 with code lanchat did not write.

For each ```vector block the expected bytes are rebuilt from the grammar of Protocol.md and the
vector's inputs, with independent libraries: cbor2 (and a deterministic encoder written here from
§2, each checking the other), PyNaCl and `cryptography` for Ed25519 (two libraries), hashlib and
PyNaCl for BLAKE2b, PyNaCl's XChaCha20-Poly1305 and a second construction (HChaCha20 written here
from draft-irtf-cfrg-xchacha, then `cryptography`'s ChaCha20-Poly1305), and `noiseprotocol` for
the handshake. Range-based set reconciliation (§8.3) is implemented here from the text alone and
runs whole rounds of the reconciliation vectors. Nothing here calls lanchat.

A vector whose kind this script does not know, or that has a field no check reads, fails: a new
kind of vector cannot pass without being checked.

Prints one line per vector (`ok NAME` or `FAIL NAME: WHY`), then `N passed, M failed`; exits 1 on
any failure.

Usage: vectors_interop.py [PROTOCOL_MD]     (default: Protocol.md next to Tools/)
"""
import base64
import hashlib
import json
import math
import os
import random
import re
import struct
import sys
import unicodedata
import warnings

import cbor2
import nacl.bindings
import nacl.hash
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305
from nacl.exceptions import BadSignatureError
from nacl.signing import SigningKey, VerifyKey
from noise.connection import Keypair, NoiseConnection

# Constants, as Protocol.md states them.
RECORD_DOMAIN = b"lanchat/record/v1\x00"                       # §3.2
NETWORK_DOMAIN = b"lanchat/network/v1\x00"                     # §6
SUBKEY_LABELS = {                                              # §6
    "datagram-key": b"lanchat/datagram/v1",
    "session-psk": b"lanchat/session-psk/v1",
    "network-id": b"lanchat/network-id/v1",
}
DATAGRAM_AD = b"lanchat/datagram/v1"                           # §7, followed by the type byte
EXPORT_MAGIC = b"lanchat-export\x00\x01"                       # §4
NOISE_NAME = b"Noise_XXpsk3_25519_ChaChaPoly_BLAKE2b"          # §8.1
NOISE_PROLOGUE = b"lanchat/session/v1"                         # §8.1
MAX_RECORD = 1_048_576                                         # §3.4, §9
MAX_PAIRS = 1000
MAX_DATAGRAM = 1200                                            # §7, §9
LIVE_DOMAIN = b"lanchat/live/v1\x00"                           # §7, signed live values
MAX_LIVE_PATH, MAX_LIVE_VALUE = 512, 512                       # §7, §9
MAX_FRAME = 2_097_152                                          # §8.2, §9
MAX_INT = 2 ** 53                                              # §3.4
MAX_DEPTH, MAX_ITEMS = 40, 200_000                             # §2


class VectorError(Exception):
    """A vector that does not check out; the message says why."""


def require(condition, why):
    if not condition:
        raise VectorError(why)


# --------------------------------------------------------------------------------------------
# Reading the vectors.

class Vector:
    """One ```vector block: its fields, and which of them a check has read."""

    def __init__(self, fields, line, problems=()):
        self.fields, self.line, self.problems = fields, line, list(problems)
        self.read = {"name", "kind"}

    @property
    def name(self):
        return self.fields.get("name") or f"(vector at line {self.line})"

    def has(self, key):
        return key in self.fields

    def text(self, key):
        require(key in self.fields, f"no field '{key}'")
        self.read.add(key)
        return self.fields[key]

    def hex(self, key, size=None):
        value = self.text(key)
        require(re.fullmatch(r"([0-9a-f]{2})*", value) is not None, f"'{key}' is not lower-case hex")
        data = bytes.fromhex(value)
        require(size is None or len(data) == size, f"'{key}' is {len(data)} bytes, not {size}")
        return data

    def uint(self, key):
        value = self.text(key)
        require(re.fullmatch(r"0|[1-9][0-9]*", value) is not None, f"'{key}' is not an unsigned integer")
        return int(value)

    def unread(self):
        return sorted(set(self.fields) - self.read)


def read_vectors(text):
    """Every ```vector block of the document, in order. A malformed block is a failure, never
    skipped: its problem is kept and reported under its name."""
    vectors, lines = [], text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.startswith("```vector"):
            i += 1
            continue
        start, fields, key, problems = i + 1, {}, None, []
        if line.rstrip() != "```vector":
            problems.append(f"fence '{line.strip()}' is not exactly ```vector")
        i += 1
        while i < len(lines) and not lines[i].startswith("```"):
            body = lines[i]
            if body.startswith("  ") and key is not None:
                fields[key] += body.strip()
            elif re.match(r"[a-z0-9-]+:", body):
                key, value = body.split(":", 1)
                if key in fields:
                    problems.append(f"field '{key}' given twice")
                fields[key] = value.strip()
            elif body.strip():
                problems.append(f"line {i + 1} is neither 'key: value' nor a continuation")
            i += 1
        if i == len(lines):
            problems.append("block never closed")
        vectors.append(Vector(fields, start, problems))
        i += 1
    return vectors


# --------------------------------------------------------------------------------------------
# Deterministic CBOR, written from Protocol.md §2 (and checked against cbor2's canonical mode).

def _head(major, argument):
    if argument < 24:
        return bytes([major << 5 | argument])
    for extra, size in ((24, 1), (25, 2), (26, 4), (27, 8)):
        if argument < 1 << (8 * size):
            return bytes([major << 5 | extra]) + argument.to_bytes(size, "big")
    raise VectorError("integer beyond 64 bits")


def _float(value):
    require(math.isfinite(value), "a float that is not finite")
    for code, fmt in ((0xF9, ">e"), (0xFA, ">f")):
        try:
            packed = struct.pack(fmt, value)
        except (OverflowError, struct.error):
            continue
        if struct.unpack(fmt, packed)[0] == value:
            return bytes([code]) + packed
    return b"\xfb" + struct.pack(">d", value)


def spec_cbor(value):
    if value is False:
        return b"\xf4"
    if value is True:
        return b"\xf5"
    if value is None:
        return b"\xf6"
    if isinstance(value, int):
        return _head(0, value) if value >= 0 else _head(1, -1 - value)
    if isinstance(value, float):
        return _float(value)
    if isinstance(value, bytes):
        return _head(2, len(value)) + value
    if isinstance(value, str):
        data = value.encode("utf-8")
        return _head(3, len(data)) + data
    if isinstance(value, list):
        return _head(4, len(value)) + b"".join(spec_cbor(item) for item in value)
    if isinstance(value, dict):
        items = sorted((spec_cbor(k), spec_cbor(v)) for k, v in value.items())
        require(len({k for k, _ in items}) == len(items), "duplicate map key")
        return _head(5, len(items)) + b"".join(k + v for k, v in items)
    raise VectorError(f"no CBOR for {type(value).__name__}")


def encode(value):
    """The deterministic encoding of value, from §2, which cbor2's canonical mode must agree with."""
    ours = spec_cbor(value)
    theirs = cbor2.dumps(value, canonical=True)
    require(ours == theirs, f"cbor2 canonical encoding {theirs.hex()} differs from §2's {ours.hex()}")
    return ours


def decode(data, what):
    """cbor2 decodes data as exactly one item; re-encoded deterministically it must give the same
    bytes (so data was canonical); also within §2's depth and item limits."""
    try:
        value = cbor2.loads(data)
    except Exception as exc:  # noqa: BLE001 - any refusal by cbor2 is the finding
        raise VectorError(f"{what}: cbor2 cannot decode it: {exc}")
    require(spec_cbor(value) == data, f"{what}: not deterministic CBOR (re-encoded it differs)")
    require(cbor2.dumps(value, canonical=True) == data, f"{what}: cbor2's canonical re-encoding differs")
    items = 0

    def walk(node, depth):
        nonlocal items
        items += 1
        require(depth <= MAX_DEPTH, f"{what}: nested deeper than {MAX_DEPTH}")
        require(node is None or isinstance(node, (bool, int, float, bytes, str, list, dict)),
                f"{what}: holds a {type(node).__name__}, outside §2")
        if isinstance(node, list):
            for child in node:
                walk(child, depth + 1)
        elif isinstance(node, dict):
            for k, child in node.items():
                walk(k, depth + 1)
                walk(child, depth + 1)

    walk(value, 1)
    require(items <= MAX_ITEMS, f"{what}: more than {MAX_ITEMS} items")
    return value


# --------------------------------------------------------------------------------------------
# Hashes, signatures and keys, each from two independent implementations where they exist.

def blake2b_256(data, key=b""):
    a = hashlib.blake2b(data, digest_size=32, key=key).digest()
    b = nacl.hash.blake2b(data, digest_size=32, key=key, encoder=nacl.encoding.RawEncoder)
    require(a == b, "hashlib and PyNaCl disagree on a BLAKE2b-256")
    return a


def ed25519_public(seed):
    a = bytes(SigningKey(seed).verify_key)
    b = Ed25519PrivateKey.from_private_bytes(seed).public_key().public_bytes(
        serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    require(a == b, "PyNaCl and cryptography disagree on an Ed25519 public key")
    return a


def ed25519_sign(seed, message):
    a = SigningKey(seed).sign(message).signature
    b = Ed25519PrivateKey.from_private_bytes(seed).sign(message)
    require(a == b, "PyNaCl and cryptography disagree on an Ed25519 signature")
    return a


def x25519_from_ed25519(seed):
    """The X25519 key pair of an Ed25519 identity (§8.1): the private scalar is the clamped first
    half of SHA-512(seed) (RFC 8032 §5.1.5), the public key its X25519 base point multiple; PyNaCl's
    conversions of the Ed25519 keys (libsodium's, as §8.1 names them) must agree."""
    digest = bytearray(hashlib.sha512(seed).digest()[:32])
    digest[0] &= 248
    digest[31] &= 127
    digest[31] |= 64
    private = bytes(digest)
    public = X25519PrivateKey.from_private_bytes(private).public_key().public_bytes(
        serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    signing = SigningKey(seed)
    sk64 = seed + bytes(signing.verify_key)
    require(nacl.bindings.crypto_sign_ed25519_sk_to_curve25519(sk64) == private,
            "PyNaCl's Ed25519-to-X25519 private key differs from SHA-512(seed) clamped")
    require(nacl.bindings.crypto_sign_ed25519_pk_to_curve25519(bytes(signing.verify_key)) == public,
            "PyNaCl's Ed25519-to-X25519 public key differs from the X25519 public of the scalar")
    return private, public


def _rotl(v, n):
    return ((v << n) & 0xFFFFFFFF) | (v >> (32 - n))


def hchacha20(key, nonce16):
    """HChaCha20 (draft-irtf-cfrg-xchacha §2.2): ChaCha20's 20 rounds without the final addition,
    words 0-3 and 12-15 of the state."""
    state = [0x61707865, 0x3320646E, 0x79622D32, 0x6B206574]
    state += list(struct.unpack("<8I", key)) + list(struct.unpack("<4I", nonce16))

    def quarter(a, b, c, d):
        state[a] = (state[a] + state[b]) & 0xFFFFFFFF; state[d] = _rotl(state[d] ^ state[a], 16)
        state[c] = (state[c] + state[d]) & 0xFFFFFFFF; state[b] = _rotl(state[b] ^ state[c], 12)
        state[a] = (state[a] + state[b]) & 0xFFFFFFFF; state[d] = _rotl(state[d] ^ state[a], 8)
        state[c] = (state[c] + state[d]) & 0xFFFFFFFF; state[b] = _rotl(state[b] ^ state[c], 7)

    for _ in range(10):
        quarter(0, 4, 8, 12); quarter(1, 5, 9, 13); quarter(2, 6, 10, 14); quarter(3, 7, 11, 15)
        quarter(0, 5, 10, 15); quarter(1, 6, 11, 12); quarter(2, 7, 8, 13); quarter(3, 4, 9, 14)
    return struct.pack("<8I", *(state[0:4] + state[12:16]))


def xchacha_seal(key, nonce, plaintext, ad):
    a = nacl.bindings.crypto_aead_xchacha20poly1305_ietf_encrypt(plaintext, ad, nonce, key)
    b = ChaCha20Poly1305(hchacha20(key, nonce[:16])).encrypt(b"\0" * 4 + nonce[16:], plaintext, ad)
    require(a == b, "PyNaCl's XChaCha20-Poly1305 and HChaCha20 + cryptography's ChaCha20-Poly1305 disagree")
    return a


def xchacha_open(key, nonce, sealed, ad):
    try:
        a = nacl.bindings.crypto_aead_xchacha20poly1305_ietf_decrypt(sealed, ad, nonce, key)
        b = ChaCha20Poly1305(hchacha20(key, nonce[:16])).decrypt(b"\0" * 4 + nonce[16:], sealed, ad)
    except Exception as exc:  # noqa: BLE001
        raise VectorError(f"the datagram does not open: {type(exc).__name__}")
    require(a == b, "the two XChaCha20-Poly1305 openings disagree")
    return a


# --------------------------------------------------------------------------------------------
# Tree values, paths and record bodies (§3.4, §3.5, §5.1).

FORBIDDEN_KEY = set(".#$/[]") | {chr(c) for c in range(0x20)} | {"\x7f"}


def valid_key(key):
    return isinstance(key, str) and key != "" and not (set(key) & FORBIDDEN_KEY)


def valid_path(path):
    if path == "":
        return True
    if not isinstance(path, str) or not path.startswith("/"):
        return False
    keys = path[1:].split("/")
    return len(keys) <= 32 and len(path[1:].encode()) <= 768 and all(valid_key(k) for k in keys)


def number(value):
    """A JSON number as §3.4 has it on the wire: the IEEE double it denotes, as an integer when
    integral and within ±2^53, else as a float."""
    if isinstance(value, int) and abs(value) <= MAX_INT:
        return value
    as_double = float(value)
    require(math.isfinite(as_double), "a number that is not finite")
    if as_double.is_integer() and abs(as_double) <= MAX_INT:
        return int(as_double)
    return as_double


def wire_value(value):
    """A JSON value of a vector's `pairs`, as a record holds it (§3.4, §5.2): numbers by §3.4,
    arrays as objects keyed "0", "1", ..., null members and empty objects gone (None if nothing
    is left)."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, (int, float)):
        return number(value)
    if isinstance(value, list):
        value = {str(i): item for i, item in enumerate(value)}
    if isinstance(value, dict):
        require(".sv" not in value, "a vector's value holds .sv, which records never do (§5.2)")
        members = {k: wire_value(v) for k, v in value.items()}
        members = {k: v for k, v in members.items() if v is not None}
        return members or None
    raise VectorError(f"a JSON value of type {type(value).__name__}")


def check_value(value, path, top):
    """§3.4 on a decoded value at path."""
    if value is None:
        require(top, f"{path}: a null member")
        return
    if isinstance(value, bool) or isinstance(value, str):
        return
    if isinstance(value, int):
        require(abs(value) <= MAX_INT, f"{path}: an integer beyond ±2^53")
        return
    if isinstance(value, float):
        require(math.isfinite(value), f"{path}: a float that is not finite")
        require(not (value.is_integer() and abs(value) <= MAX_INT), f"{path}: an integral float")
        return
    require(isinstance(value, dict), f"{path}: a {type(value).__name__}, not a tree value")
    require(len(value) > 0, f"{path}: an empty object")
    normalized = [unicodedata.normalize("NFC", k) for k in value if isinstance(k, str)]
    require(len(normalized) == len(value), f"{path}: a key that is not text")
    require(len(set(normalized)) == len(value), f"{path}: keys equal under canonical equivalence")
    for key, member in value.items():
        require(valid_key(key), f"{path}: invalid key {key!r}")
        child = f"{path}/{key}"
        require(valid_path(child), f"{child}: not a valid path")
        check_value(member, child, False)


def check_write(body, max_pairs=None):
    max_pairs = max_pairs or MAX_PAIRS
    require(isinstance(body, list) and 1 <= len(body) <= max_pairs, f"a write of 1 to {max_pairs} pairs")
    paths = []
    for pair in body:
        require(isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], str), "a pair is not [path, value]")
        require(valid_path(pair[0]), f"invalid path {pair[0]!r}")
        check_value(pair[1], pair[0], True)
        paths.append(pair[0].encode())
    for a, b in zip(paths, paths[1:]):
        require(a < b, "paths not in strictly increasing bytewise order")
    nfc = sorted(unicodedata.normalize("NFC", p.decode()).encode() for p in paths)
    require(len(set(nfc)) == len(nfc), "two paths are equal in NFC")
    held = set(nfc)
    for p in nfc:
        # Every ancestor of p, the root included: none may be another pair's path, but across a
        # zone's root (an open path above a path in a zone).
        parts = p.split(b"/")
        for i in range(1, len(parts)):
            ancestor = b"/".join(parts[:i])
            if ancestor in held and not (zone_of(ancestor) is None and zone_of(p) is not None):
                require(False, "one path is an ancestor of another in the same zone")


def zone_of(path):
    """The protected zone of a path (Protocol.md §5.4) as a tuple, None for the open zone."""
    keys = path.split(b"/")[1:] if path else []
    if len(keys) >= 2 and keys[0] == b"users":
        return (b"users", keys[1])
    if len(keys) >= 4 and keys[0] == b"conversations" and keys[2] == b"messages":
        return (b"conversations", keys[1], keys[3])
    return None


def check_manifest(body):
    require(isinstance(body, list) and len(body) == 5, "a manifest is not an array of 5")
    blob, size, kind, chunk_size, chunks = body
    require(isinstance(blob, bytes) and len(blob) == 32, "blob is not 32 bytes")
    require(isinstance(size, int) and not isinstance(size, bool) and 1 <= size <= 2 ** 30, "size outside 1..2^30")
    require(isinstance(kind, str) and len(kind.encode()) <= 127 and "/" in kind
            and all(0x20 < ord(c) < 0x7F for c in kind), "type is not printable ASCII with a '/'")
    require(isinstance(chunk_size, int) and 4096 <= chunk_size <= 1_048_576, "chunk size outside 4096..1048576")
    require(isinstance(chunks, list) and len(chunks) == -(-size // chunk_size), "not ceil(size / chunk-size) chunks")
    require(all(isinstance(c, bytes) and len(c) == 32 for c in chunks), "a chunk hash is not 32 bytes")


def valid_storage_path(path):
    data = path.encode() if isinstance(path, str) else b""
    return (1 <= len(data) <= 1024 and all(s not in ("", ".", "..") for s in path.split("/"))
            and not any(ord(c) < 0x20 or ord(c) == 0x7F for c in path))


def check_file(body):
    require(isinstance(body, list) and len(body) == 2, "a file entry is not an array of 2")
    require(isinstance(body[0], str) and valid_storage_path(body[0]), "invalid storage path")
    require(body[1] is None or (isinstance(body[1], bytes) and len(body[1]) == 32), "manifest id is not 32 bytes or null")


def valid_private_id(cid):
    return (isinstance(cid, str) and len(cid) == 22 and cid[:2] in ("g_", "d_")
            and re.fullmatch(r"[A-Za-z0-9_-]{20}", cid[2:]) is not None)


def check_key_body(body):
    require(isinstance(body, list) and len(body) == 5, "a key record is not an array of 5")
    cid, epoch, salt, boxes, meta = body
    require(valid_private_id(cid), "not a private conversation id")
    require(type(epoch) is int and epoch >= 1, "epoch is not an integer from 1")
    require(isinstance(salt, bytes) and len(salt) == 32, "salt is not 32 bytes")
    require(isinstance(boxes, list) and 1 <= len(boxes) <= 1000, "not 1 to 1000 sealed keys")
    require(all(isinstance(b, bytes) and len(b) == 80 for b in boxes), "a sealed key is not 80 bytes")
    require(all(a < b for a, b in zip(boxes, boxes[1:])), "sealed keys not in strictly increasing order")
    require(isinstance(meta, bytes) and len(meta) >= 41, "meta is shorter than 41 bytes")


def check_sealed_body(body):
    require(isinstance(body, list) and len(body) == 3, "a sealed write is not an array of 3")
    require(valid_private_id(body[0]), "not a private conversation id")
    require(isinstance(body[1], bytes) and len(body[1]) == 32, "epoch id is not 32 bytes")
    require(isinstance(body[2], bytes) and len(body[2]) >= 41, "ciphertext is shorter than 41 bytes")


def check_leave_body(body):
    require(isinstance(body, list) and len(body) == 1 and valid_private_id(body[0]), "a leave is not [conversation]")


LARGE_WRITE_MAX_SIZE = 256 * 1024 * 1024   # §3.7
LARGE_WRITE_MAX_PAIRS = 262_144            # §3.7


def check_large_write(body):
    require(isinstance(body, list) and len(body) == 4, "a large write is not an array of 4")
    content, size, chunk_size, chunks = body
    require(isinstance(content, bytes) and len(content) == 32, "content hash is not 32 bytes")
    require(isinstance(size, int) and not isinstance(size, bool) and 1 <= size <= LARGE_WRITE_MAX_SIZE,
            "size outside 1..268435456")
    require(isinstance(chunk_size, int) and 4096 <= chunk_size <= 1_048_576, "chunk size outside 4096..1048576")
    require(isinstance(chunks, list) and len(chunks) == -(-size // chunk_size), "not ceil(size / chunk-size) chunks")
    require(all(isinstance(c, bytes) and len(c) == 32 for c in chunks), "a chunk hash is not 32 bytes")


BODY_CHECKS = {1: check_write, 2: check_manifest, 3: check_file, 4: check_large_write,
               5: check_key_body, 6: check_sealed_body, 7: check_leave_body}


def check_record_bytes(data, what):
    """A record as a decoder of §3 sees it: deterministic CBOR, the grammar, §3.4/§3.5, a valid
    signature. Returns its fields."""
    require(len(data) <= MAX_RECORD, f"{what}: larger than {MAX_RECORD} bytes")
    record = decode(data, what)
    require(isinstance(record, list) and len(record) == 6, f"{what}: not an array of 6")
    version, kind, author, clock, body, signature = record
    require(version == 1 and type(version) is int, f"{what}: version is not 1")
    require(kind in BODY_CHECKS and type(kind) is int, f"{what}: unknown kind {kind!r}")
    require(isinstance(author, bytes) and len(author) == 32, f"{what}: author is not 32 bytes")
    require(type(clock) is int and 0 <= clock < 2 ** 64, f"{what}: clock is not a u64")
    require(isinstance(signature, bytes) and len(signature) == 64, f"{what}: signature is not 64 bytes")
    try:
        BODY_CHECKS[kind](body)
    except VectorError as exc:
        raise VectorError(f"{what}: {exc}")
    unsigned = encode([version, kind, author, clock, body])
    require(unsigned == b"\x85" + data[1:-66], f"{what}: the unsigned bytes are not the record less its signature")
    try:
        VerifyKey(author).verify(RECORD_DOMAIN + unsigned, signature)
    except BadSignatureError:
        raise VectorError(f"{what}: PyNaCl refuses the signature")
    tampered = bytearray(unsigned)
    tampered[-1] ^= 1
    try:
        VerifyKey(author).verify(RECORD_DOMAIN + bytes(tampered), signature)
        raise VectorError(f"{what}: the signature also verifies for altered bytes")
    except BadSignatureError:
        pass
    return record


def build_record(seed, kind, clock, body):
    """The record §3.1/§3.2 prescribes, signed with the seed's key."""
    author = ed25519_public(seed)
    unsigned = encode([1, kind, author, clock, body])
    signature = ed25519_sign(seed, RECORD_DOMAIN + unsigned)
    return encode([1, kind, author, clock, body, signature])


def compare(what, expected, given):
    require(expected == given, f"{what} differs: the spec gives {expected.hex()}, the vector {given.hex()}")


# --------------------------------------------------------------------------------------------
# Range-based set reconciliation, written from Protocol.md §8.3 alone.

NEG_VERSION = 0x61                                             # §8.3.1
NEG_INFINITY = 2 ** 64 - 1                                     # §8.3: the timestamp "infinity"
NEG_SKIP, NEG_FINGERPRINT, NEG_IDLIST = 0, 1, 2                # §8.3.1 modes
NEG_SPLIT_BELOW, NEG_BUCKETS = 32, 16                          # §8.3.3
NEG_WRITE_LIMIT = 60_000                                       # §8.3.4
NEG_GROW_LIMIT = 59_937                                        # §8.3.4: 60,000 - 43 - 1 - 19
NEG_MAX_BOUND, NEG_CLOSING = 43, 19                            # §8.3.4
NEG_MAX_RANGES, NEG_MAX_BYTES = 1_048_576, 16 * 1024 * 1024    # §8.3.1
NEG_EMPTY_FINGERPRINT = bytes.fromhex("7f9c9e31ac8256ca2f258583df262dbc")   # §8.3.2
NEG_BOTTOM = (0, b"")
NEG_TOP = (NEG_INFINITY, b"")
VECTOR_ITEM_CLOCK, VECTOR_ITEM_STEP = 115634406555648000, 65536   # §10: item i


class NegentropyRefusal(VectorError):
    """A message §8.3.1 says to refuse."""


def varint(value):
    """§8.3.1: base 128, most significant group first, the high bit set on all bytes but the last."""
    require(0 <= value < 2 ** 64, "a varint beyond 64 bits")
    groups = [value & 0x7F]
    value >>= 7
    while value:
        groups.append(value & 0x7F | 0x80)
        value >>= 7
    return bytes(reversed(groups))


def read_varint(data, offset):
    start, value = offset, 0
    while True:
        if offset >= len(data):
            raise NegentropyRefusal("the message ends inside a varint")
        byte = data[offset]
        offset += 1
        if offset - start == 1 and byte == 0x80:
            raise NegentropyRefusal("a varint not in its shortest form")
        if offset - start > 10:
            raise NegentropyRefusal("a varint longer than 10 bytes")
        value = value << 7 | (byte & 0x7F)
        if not byte & 0x80:
            break
    if value >= 2 ** 64:
        raise NegentropyRefusal("a varint that overflows 64 bits")
    return value, offset


def neg_fingerprint(ids):
    """§8.3.2: SHA-256 of the little-endian sum of the ids mod 2^256 and the varint of their count."""
    total = sum(int.from_bytes(i, "little") for i in ids) % (1 << 256)
    return hashlib.sha256(total.to_bytes(32, "little") + varint(len(ids))).digest()[:16]


def padded(prefix):
    return prefix + b"\0" * (32 - len(prefix))


def bound_key(bound):
    """Bounds compared as §8.3.1 says: timestamp, then the prefix padded with zero bytes."""
    return (bound[0], b"") if bound[0] == NEG_INFINITY else (bound[0], padded(bound[1]))


def item_below(item, bound):
    """§8.3.1: (t, id) is below (T, prefix) when t < T, or t == T and id < prefix padded."""
    if bound[0] == NEG_INFINITY:
        return True
    return item[0] < bound[0] or (item[0] == bound[0] and item[1] < padded(bound[1]))


def shortest_bound(p, c):
    """§8.3.3: the shortest bound between item p and the next item c."""
    if p[0] != c[0]:
        return (c[0], b"")
    k = 0
    while k < 32 and p[1][k] == c[1][k]:
        k += 1
    require(k < 32, "two items with one timestamp and one id")
    return (c[0], c[1][:k + 1])


def parse_negentropy(data):
    """A message of §8.3.1, refused as that section lists. Returns [(bound, mode, payload)]."""
    if len(data) > NEG_MAX_BYTES:
        raise NegentropyRefusal("a message above 16 MiB")
    if not data:
        raise NegentropyRefusal("an empty message")
    if data[0] != NEG_VERSION:
        raise NegentropyRefusal(f"version byte {data[0]:02x}, not 61")
    offset, previous, last, ranges = 1, 0, NEG_BOTTOM, []
    while offset < len(data):
        delta, offset = read_varint(data, offset)
        length, offset = read_varint(data, offset)
        if length > 32:
            raise NegentropyRefusal("a prefix longer than 32 bytes")
        if offset + length > len(data):
            raise NegentropyRefusal("the message ends inside a prefix")
        prefix = data[offset:offset + length]
        offset += length
        if delta == 0:
            timestamp = NEG_INFINITY
        else:
            if previous + delta - 1 > NEG_INFINITY:
                raise NegentropyRefusal("a timestamp delta beyond 2^64 - 1")
            timestamp = previous + delta - 1
        previous = timestamp
        bound = NEG_TOP if timestamp == NEG_INFINITY else (timestamp, prefix)
        if not (bound_key(bound) > bound_key(last) or (bound == NEG_TOP and last == NEG_TOP)):
            raise NegentropyRefusal("bounds that do not increase")
        last = bound
        if offset >= len(data):
            raise NegentropyRefusal("the message ends before a mode")
        mode, offset = read_varint(data, offset)
        if mode == NEG_SKIP:
            payload = None
        elif mode == NEG_FINGERPRINT:
            if offset + 16 > len(data):
                raise NegentropyRefusal("the message ends inside a fingerprint")
            payload, offset = data[offset:offset + 16], offset + 16
        elif mode == NEG_IDLIST:
            count, offset = read_varint(data, offset)
            if count * 32 > len(data) - offset:
                raise NegentropyRefusal("an IdList count beyond the bytes left")
            payload = [data[offset + 32 * i:offset + 32 * (i + 1)] for i in range(count)]
            offset += 32 * count
        else:
            raise NegentropyRefusal(f"mode {mode}")
        ranges.append((bound, mode, payload))
        if len(ranges) > NEG_MAX_RANGES:
            raise NegentropyRefusal("more than 1,048,576 ranges")
    return ranges


class NegWriter:
    """One message being written: bounds as timestamp deltas from the previous bound written."""

    def __init__(self):
        self.out = bytearray([NEG_VERSION])
        self.previous = 0

    def mark(self):
        return len(self.out), self.previous

    def rewind(self, mark):
        del self.out[mark[0]:]
        self.previous = mark[1]

    def bound(self, bound):
        if bound[0] == NEG_INFINITY:
            self.out += b"\x00\x00"
            self.previous = NEG_INFINITY
            return
        self.out += varint(bound[0] - self.previous + 1) + varint(len(bound[1])) + bound[1]
        self.previous = bound[0]

    def range(self, bound, mode, payload=None):
        self.bound(bound)
        self.out += varint(mode)
        if mode == NEG_FINGERPRINT:
            self.out += payload
        elif mode == NEG_IDLIST:
            self.out += varint(len(payload)) + b"".join(payload)


class NegSide:
    """One side of §8.3's reconciliation over a sorted list of (timestamp, id) items."""

    def __init__(self, items, initiator, limit=NEG_WRITE_LIMIT):
        self.items = sorted(items)
        require(len(set(self.items)) == len(self.items), "a set holding an item twice")
        require(all(0 <= t < NEG_INFINITY and len(i) == 32 for t, i in self.items), "an item outside §8.3's keyspace")
        self.initiator, self.limit = initiator, limit
        self.grow_limit = limit - NEG_MAX_BOUND - 1 - NEG_CLOSING
        self.have, self.need, self.learned = [], [], set()

    def first_index(self, start, bound):
        """The index of the first item at or above bound, from start on."""
        index = start
        while index < len(self.items) and item_below(self.items[index], bound):
            index += 1
        return index

    def split(self, writer, lo, hi, bound):
        """§8.3.3: our items[lo:hi], below bound, as one IdList or 16 fingerprinted buckets."""
        chosen = self.items[lo:hi]
        if len(chosen) < NEG_SPLIT_BELOW:
            writer.range(bound, NEG_IDLIST, [i for _, i in chosen])
            return
        base, extra = divmod(len(chosen), NEG_BUCKETS)
        start = 0
        for b in range(NEG_BUCKETS):
            size = base + (1 if b < extra else 0)
            bucket = chosen[start:start + size]
            start += size
            end = bound if b == NEG_BUCKETS - 1 else shortest_bound(bucket[-1], chosen[start])
            writer.range(end, NEG_FINGERPRINT, neg_fingerprint([i for _, i in bucket]))

    def first_message(self):
        """§8.3.3: the split of all our items with the bound infinity."""
        require(self.initiator, "only the initiator writes a first message")
        writer = NegWriter()
        self.split(writer, 0, len(self.items), NEG_TOP)
        return bytes(writer.out)

    def answer(self, message):
        """§8.3.3 and §8.3.4: our answer to a received message (None for the initiator when it is
        only the version byte). The initiator's have and need gain what it learns; within a round
        an id joins them at most once (§8.3)."""
        if not self.initiator and message and message[0] != NEG_VERSION and len(message) <= NEG_MAX_BYTES:
            return bytes([NEG_VERSION])     # §8.3.1: so that a later version can fall back
        ranges = parse_negentropy(message)
        writer = NegWriter()
        lower, lo, pending = NEG_BOTTOM, 0, False   # pending: done ranges not yet covered by a Skip
        for bound, mode, payload in ranges:
            hi = self.first_index(lo, bound)
            ours = self.items[lo:hi]
            done = False
            if mode == NEG_SKIP:
                done = True
            elif mode == NEG_FINGERPRINT and neg_fingerprint([i for _, i in ours]) == payload:
                done = True
            elif mode == NEG_IDLIST and self.initiator:
                listed, held = set(payload), {i for _, i in ours}
                for i in [i for _, i in ours if i not in listed] + [i for i in payload if i not in held]:
                    if i not in self.learned:
                        self.learned.add(i)
                        (self.need if i in listed else self.have).append(i)
                done = True
            if done:
                pending = True
                lower, lo = bound, hi
                continue
            mark = writer.mark()
            if pending:
                writer.range(lower, NEG_SKIP)
            if mode == NEG_FINGERPRINT:
                self.split(writer, lo, hi, bound)
                if len(writer.out) > self.grow_limit:
                    writer.rewind(mark)
                    return self.close(writer, pending, lower, lo)
            else:   # an IdList received by the responder: all our ids in the range, as many as fit
                v = len(varint(len(ours)))
                fit = (self.limit - len(writer.out) - (NEG_MAX_BOUND + 1 + v + NEG_CLOSING)) // 32
                if 1 <= fit < len(ours):
                    end = shortest_bound(ours[fit - 1], ours[fit])
                    writer.range(end, NEG_IDLIST, [i for _, i in ours[:fit]])
                    return self.close(writer, False, end, lo + fit)
                writer.range(bound, NEG_IDLIST, [i for _, i in ours])
                if (fit < 1 and ours) or len(writer.out) > self.grow_limit:
                    writer.rewind(mark)
                    return self.close(writer, pending, lower, lo)
            pending = False
            lower, lo = bound, hi
        out = bytes(writer.out)
        return None if self.initiator and out == bytes([NEG_VERSION]) else out

    def close(self, writer, pending, lower, lo):
        """§8.3.4's continuation: the pending Skip, then a Fingerprint range to infinity of all our
        items from lo on."""
        if pending:
            writer.range(lower, NEG_SKIP)
        writer.range(NEG_TOP, NEG_FINGERPRINT, neg_fingerprint([i for _, i in self.items[lo:]]))
        out = bytes(writer.out)
        require(len(out) <= self.limit, f"a message of {len(out)} bytes, above {self.limit}")
        return out


def neg_round(a, b, limit=NEG_WRITE_LIMIT, given=None, max_messages=10_000):
    """A whole round of §8.3 between an initiator holding a and a responder holding b. Each side
    is handed given[k] (the vector's bytes) where there is one, else the other side's message.
    Returns the messages written, in order, and the initiator's have and need."""
    initiator, responder = NegSide(a, True, limit), NegSide(b, False, limit)
    produced = [initiator.first_message()]
    while len(produced) < max_messages:
        k = len(produced) - 1
        received = given[k] if given is not None and k < len(given) else produced[k]
        reply = (responder if k % 2 == 0 else initiator).answer(received)
        if reply is None:
            return produced, initiator.have, initiator.need
        produced.append(reply)
    raise VectorError(f"the round did not end within {max_messages} messages")


def vector_item(i):
    """§10: item i of the reconciliation vectors."""
    return (VECTOR_ITEM_CLOCK + VECTOR_ITEM_STEP * (i // 2), hashlib.sha256(str(i).encode()).digest())


def item_numbers(v, key):
    text = v.text(key)
    numbers = [x.strip() for x in text.split(",")] if text.strip() else []
    require(all(re.fullmatch(r"0|[1-9][0-9]*", x) for x in numbers), f"'{key}' is not a list of item numbers")
    numbers = [int(x) for x in numbers]
    require(len(set(numbers)) == len(numbers), f"'{key}' names an item twice")
    return numbers


def check_spec_constants():
    """The examples §8.3.1 and §8.3.2 print, which the code above must reproduce."""
    for value, hexed in ((0, "00"), (127, "7f"), (128, "8100"), (300, "822c"), (2 ** 64 - 1, "81ffffffffffffffff7f")):
        require(varint(value).hex() == hexed, f"varint({value}) is not {hexed} as §8.3.1 says")
        require(read_varint(bytes.fromhex(hexed), 0) == (value, len(hexed) // 2), f"{hexed} does not read as {value}")
    require(neg_fingerprint([]) == NEG_EMPTY_FINGERPRINT, "the fingerprint of no ids differs from §8.3.2's")
    require(NEG_WRITE_LIMIT - NEG_MAX_BOUND - 1 - NEG_CLOSING == NEG_GROW_LIMIT, "§8.3.4's 59,937 is not 60,000 - 43 - 1 - 19")
    require(len(varint(2 ** 64 - 1)) + 1 + 32 == NEG_MAX_BOUND, "the largest bound is not 43 bytes")
    require(len(b"\x00\x00" + varint(NEG_FINGERPRINT) + NEG_EMPTY_FINGERPRINT) == NEG_CLOSING, "the closing range is not 19 bytes")
    require(vector_item(0)[1].hex() == "5feceb66ffc86f38d952786c6d696c79c2dbc239dd4e91b46729d73a27fb57e9",
            "item 0's id differs from §10's example")


RECONCILE_MESSAGES = {}   # vector name -> (initiator messages, responder messages)


def check_reconcile(v):
    """A whole round (§8.3) between the sets `a` and `b`, each side run by the code above and
    handed the vector's messages: every message must be the vector's, in order, the round must
    end where the vector ends, and the initiator must learn `have` and `need` in their order."""
    check_spec_constants()
    a_numbers, b_numbers = item_numbers(v, "a"), item_numbers(v, "b")
    a = [vector_item(i) for i in a_numbers]
    b = [vector_item(i) for i in b_numbers]
    given, k = [], 1
    while v.has(f"message-{k}"):
        given.append(v.hex(f"message-{k}"))
        k += 1
    require(given, "no field 'message-1'")
    for index, message in enumerate(given, 1):
        require(len(message) <= NEG_WRITE_LIMIT, f"message-{index} is above {NEG_WRITE_LIMIT} bytes")
        try:
            parse_negentropy(message)
        except NegentropyRefusal as exc:
            raise VectorError(f"message-{index} is refused by §8.3.1: {exc}")
    produced, have, need = neg_round(a, b, given=given, max_messages=len(given) + 2)
    for index, (ours, theirs) in enumerate(zip(produced, given), 1):
        compare(f"message-{index}", ours, theirs)
    require(len(produced) == len(given),
            f"the round has {len(produced)} messages by §8.3, the vector {len(given)}"
            + (f" (next by §8.3: {produced[len(given)].hex()})" if len(produced) > len(given) else ""))
    number = {vector_item(i)[1]: i for i in set(a_numbers) | set(b_numbers)}
    for key, learned in (("have", have), ("need", need)):
        expected = item_numbers(v, key)
        got = [number[i] for i in learned]
        require(got == expected, f"'{key}' by §8.3 is {', '.join(map(str, got)) or '(none)'}, the vector {', '.join(map(str, expected)) or '(none)'}")
    require(set(have) == {i for _, i in a} - {i for _, i in b}, "have is not the initiator's items the responder lacks")
    require(set(need) == {i for _, i in b} - {i for _, i in a}, "need is not the responder's items the initiator lacks")
    RECONCILE_MESSAGES[v.name] = (given[0::2], given[1::2])
    return f"{len(a)} and {len(b)} items, {len(given)} messages, have {len(have)}, need {len(need)}"


# --------------------------------------------------------------------------------------------
# One check per kind of vector. Each returns a short note for the report.

RECORDS_BY_NAME = {}   # vector name -> record bytes, for the export vectors that list them


def finish_record(v, kind, body):
    try:
        BODY_CHECKS[kind](body)
    except VectorError as exc:
        raise VectorError(f"the vector's inputs make no valid body: {exc}")
    built = build_record(v.hex("seed", 32), kind, v.uint("clock"), body)
    given = v.hex("record")
    compare("record", built, given)
    check_record_bytes(given, "record")
    compare("id (BLAKE2b-256 of the record)", blake2b_256(built), v.hex("id", 32))
    RECORDS_BY_NAME[v.name] = given
    return f"{len(given)} bytes"


def check_record(v):
    try:
        pairs = json.loads(v.text("pairs"))
    except json.JSONDecodeError as exc:
        raise VectorError(f"pairs are not JSON: {exc}")
    require(isinstance(pairs, list) and all(isinstance(p, list) and len(p) == 2 for p in pairs), "pairs is not [[path, value], ...]")
    return finish_record(v, 1, [[path, wire_value(value)] for path, value in pairs])


def check_manifest_record(v):
    content, chunk_size = v.hex("content"), v.uint("chunk-size")
    chunks = [blake2b_256(content[i:i + chunk_size]) for i in range(0, len(content), chunk_size)]
    return finish_record(v, 2, [blake2b_256(content), len(content), v.text("type"), chunk_size, chunks])


def check_file_record(v):
    manifest = None if v.text("manifest") == "null" else v.hex("manifest", 32)
    return finish_record(v, 3, [v.text("path"), manifest])


def check_large_write_record(v):
    """§3.7: the content is the kind-1 body of the pairs, cut into chunks; the record names the
    content's hash, size, chunk size and chunk hashes. The content is read back and checked as
    a write of up to 262,144 pairs."""
    try:
        pairs = json.loads(v.text("pairs"))
    except json.JSONDecodeError as exc:
        raise VectorError(f"pairs are not JSON: {exc}")
    body = [[unicodedata.normalize("NFC", path), wire_value(value)] for path, value in pairs]
    content = encode(body)
    compare("content", content, v.hex("content"))
    check_write(decode(content, "content"), LARGE_WRITE_MAX_PAIRS)
    chunk_size = v.uint("chunk-size")
    chunks = [blake2b_256(content[i:i + chunk_size]) for i in range(0, len(content), chunk_size)]
    return finish_record(v, 4, [blake2b_256(content), len(content), chunk_size, chunks])


def check_export(v):
    stream = v.hex("stream")
    # §4's grammar, read: magic *frame end, nothing after.
    require(stream.startswith(EXPORT_MAGIC), "bad magic")
    offset, frames = len(EXPORT_MAGIC), []
    while True:
        require(offset + 4 <= len(stream), "missing end")
        length = int.from_bytes(stream[offset:offset + 4], "big")
        offset += 4
        if length == 0:
            break
        require(length <= MAX_RECORD, f"frame {len(frames) + 1}: length {length} above the limit")
        require(offset + length <= len(stream), f"frame {len(frames) + 1}: truncated")
        frames.append(stream[offset:offset + length])
        offset += length
    require(offset + 8 <= len(stream), "end without its count")
    require(int.from_bytes(stream[offset:offset + 8], "big") == len(frames), "count differs from the frames")
    require(offset + 8 == len(stream), "bytes after the end")
    for i, frame in enumerate(frames, 1):
        check_record_bytes(frame, f"record {i}")
    # §4's grammar, written: the records the vector names, in order.
    names = v.text("records").split()
    require(names, "names no records")
    missing = [n for n in names if n not in RECORDS_BY_NAME]
    require(not missing, f"names records with no checked vector before it: {', '.join(missing)}")
    built = EXPORT_MAGIC + b"".join(len(RECORDS_BY_NAME[n]).to_bytes(4, "big") + RECORDS_BY_NAME[n] for n in names)
    built += b"\0" * 4 + len(names).to_bytes(8, "big")
    compare("stream", built, stream)
    return f"{len(frames)} records"


def network_key(v):
    """The vector's network key: named (§6) or given."""
    if v.has("network"):
        key = blake2b_256(NETWORK_DOMAIN + v.text("network").encode())
        if v.has("key"):
            compare("network key", key, v.hex("key", 32))
        return key
    return v.hex("network-key", 32)


def subkey(key, field):
    return blake2b_256(SUBKEY_LABELS[field], key=key)


def check_network(v):
    require(v.has("key"), "no field 'key'")
    key = network_key(v)
    compare("datagram key", subkey(key, "datagram-key"), v.hex("datagram-key", 32))
    compare("session psk", subkey(key, "session-psk"), v.hex("session-psk", 32))
    compare("network id", subkey(key, "network-id")[:6], v.hex("network-id", 6))
    return "key and 3 subkeys"


def named_record(v):
    """The record bytes of the record vector that the field `record-vector` names (§10)."""
    name = v.text("record-vector")
    require(name in RECORDS_BY_NAME, f"record-vector names {name!r}, no checked record vector before it")
    return RECORDS_BY_NAME[name]


LIVE_BY_NAME = {}


def build_live(seed, instance, version, path, value_text):
    """A signed live value of §7 built from its fields: [author, instance, version, path, value, signature]."""
    require(len(path.encode()) <= MAX_LIVE_PATH, "live path too long")
    require(len(value_text.encode()) <= MAX_LIVE_VALUE, "live value too long")
    require(valid_path(path), f"live path {path!r} is not a valid path")
    unsigned = [ed25519_public(seed), instance, version, path, value_text.encode()]
    signature = ed25519_sign(seed, LIVE_DOMAIN + encode(unsigned))
    return encode(unsigned + [signature])


def check_live(v):
    """A live value (§7): rebuilt from its fields, verified by PyNaCl, its path owned by its author."""
    seed = v.hex("seed", 32)
    path, value_text = v.text("path"), v.text("value")
    json.loads(value_text)
    built = build_live(seed, v.hex("instance", 8), v.uint("version"), path, value_text)
    given = v.hex("live")
    compare("live", built, given)
    fields = decode(given, "live")
    require(isinstance(fields, list) and len(fields) == 6, "live is not a 6-item array")
    VerifyKey(fields[0]).verify(LIVE_DOMAIN + encode(fields[:5]), fields[5])
    segments = [s for s in path.split("/") if s]
    owner = None
    if len(segments) == 4 and segments[0] == "conversations" and segments[2] in ("typingIndicator", "readReceipts"):
        owner = segments[3]
    elif len(segments) >= 2 and segments[0] == "status":
        owner = segments[1]
    author_id = base64.urlsafe_b64encode(fields[0]).decode().rstrip("=")
    require(owner == author_id, "the live path is not its author's (§5.7)")
    LIVE_BY_NAME[v.name] = given
    return f"{len(given)} bytes, signature verified, path owned by its author"


def named_live(v):
    name = v.text("live-vector")
    require(name in LIVE_BY_NAME, f"live-vector names {name!r}, no checked live vector before it")
    return LIVE_BY_NAME[name]


def datagram_plaintext(v):
    """The plaintext of §7's grammar for the fields the vector has, and its type."""
    forms = {
        ("count", "fingerprint", "instance", "port", "seed"): 1,   # beacon
        ("record",): 2,                                            # push of the record given
        ("record-vector",): 2,                                     # push of a record vector's record
        ("live-vector",): 3,                                       # a live value
    }
    present = tuple(sorted(k for k in v.fields if k not in ("name", "kind", "network", "network-key", "nonce", "plaintext", "datagram")))
    require(present in forms, f"no datagram of §7 has the fields {', '.join(present)}")
    kind = forms[present]
    if kind == 1:
        return 1, [1, ed25519_public(v.hex("seed", 32)), v.hex("instance", 8), v.uint("port"),
                   v.uint("count"), v.hex("fingerprint", 16)]
    if kind == 3:
        return 3, [3, named_live(v)]
    record = v.hex("record") if present == ("record",) else named_record(v)
    check_record_bytes(record, "pushed record")
    require(len(record) <= 1000, "a pushed record above 1000 bytes")
    return 2, [2, record]


def check_datagram(v):
    key = subkey(network_key(v), "datagram-key")
    kind, message = datagram_plaintext(v)
    plaintext = encode(message)
    compare("plaintext", plaintext, v.hex("plaintext"))
    decode(plaintext, "plaintext")
    nonce = v.hex("nonce", 24)
    ad = DATAGRAM_AD + bytes([kind])
    built = bytes([kind]) + nonce + xchacha_seal(key, nonce, plaintext, ad)
    given = v.hex("datagram")
    compare("datagram", built, given)
    require(len(given) <= MAX_DATAGRAM, f"datagram above {MAX_DATAGRAM} bytes")
    require(given[0] == kind, "type byte")
    compare("opened plaintext", xchacha_open(key, given[1:25], given[25:], ad), plaintext)
    wrong = bytes([kind ^ 3])
    try:
        xchacha_open(key, given[1:25], given[25:], DATAGRAM_AD + wrong)
        raise VectorError("the datagram also opens under another type")
    except VectorError as exc:
        require("does not open" in str(exc), str(exc))
    return f"type {kind}, {len(given)} bytes"


def session_message(v):
    """The message of §8.2's grammar for the fields the vector has."""
    present = tuple(sorted(k for k in v.fields if k not in ("name", "kind", "frame")))
    if present == ("count", "fingerprint", "instance", "seed"):
        return "hello", [1, ed25519_public(v.hex("seed", 32)), v.hex("instance", 8), v.uint("count"),
                         v.hex("fingerprint", 16)]
    if present == ("id",):
        return "want", [5, [v.hex("id", 32)]]
    if present == ("live-vector",):
        return "live", [9, [named_live(v)]]
    if present == ("record-vector",):
        record = named_record(v)
        check_record_bytes(record, "the record")
        return "records", [4, [record]]
    if present == ("negentropy",):
        # The fields of `reconcile` and `reconcile reply` are alike: the vector's name says which.
        types = {"reconcile": 2, "reconcile-reply": 3}
        require(v.name in types, "a negentropy message whose vector is named neither reconcile nor reconcile-reply")
        negentropy = v.hex("negentropy")
        try:
            ranges = parse_negentropy(negentropy)
        except NegentropyRefusal as exc:
            raise VectorError(f"negentropy is refused by §8.3.1: {exc}")
        require(len(negentropy) <= NEG_WRITE_LIMIT, f"negentropy above {NEG_WRITE_LIMIT} bytes")
        # The message is one of a round of §10 sent by the side that sends this type.
        side = types[v.name] - 2
        rounds = [n for n, sent in RECONCILE_MESSAGES.items() if negentropy in sent[side]]
        require(rounds, f"negentropy is no {('initiator', 'responder')[side]} message of a checked reconcile vector before it")
        return f"{v.name}, {len(ranges)} ranges, from {rounds[0]}", [types[v.name], negentropy]
    raise VectorError(f"no session message of §8.2 is checked here for the fields {', '.join(present) or '(none)'}")


def check_session(v):
    what, message = session_message(v)
    body = encode(message)
    built = len(body).to_bytes(4, "big") + body
    given = v.hex("frame")
    compare("frame", built, given)
    length = int.from_bytes(given[:4], "big")
    require(1 <= length <= MAX_FRAME and length == len(given) - 4, "frame length")
    decode(given[4:], "message")
    return what


def check_handshake(v):
    psk = subkey(network_key(v), "session-psk")
    i_static, i_public = x25519_from_ed25519(v.hex("initiator-seed", 32))
    r_static, r_public = x25519_from_ed25519(v.hex("responder-seed", 32))

    def party(initiator, static, ephemeral):
        conn = NoiseConnection.from_name(NOISE_NAME)
        conn.set_as_initiator() if initiator else conn.set_as_responder()
        conn.set_psks(psk=psk)
        conn.set_prologue(NOISE_PROLOGUE)
        conn.set_keypair_from_private_bytes(Keypair.STATIC, static)
        # noiseprotocol keeps an ephemeral key pair set beforehand instead of generating one.
        conn.set_keypair_from_private_bytes(Keypair.EPHEMERAL, ephemeral)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            conn.start_handshake()
        return conn, conn.noise_protocol.handshake_state

    initiator, i_state = party(True, i_static, v.hex("initiator-ephemeral", 32))
    responder, r_state = party(False, r_static, v.hex("responder-ephemeral", 32))
    for index, (writer, reader) in enumerate(((initiator, responder), (responder, initiator), (initiator, responder)), 1):
        given = v.hex(f"message{index}")
        compare(f"message {index}", bytes(writer.write_message(b"")), given)
        require(16 <= len(given) <= 65535, f"message {index}: length outside 16..65535")
        try:
            payload = reader.read_message(given)
        except Exception as exc:  # noqa: BLE001
            raise VectorError(f"noiseprotocol cannot read message {index}: {type(exc).__name__} {exc}")
        require(bytes(payload) == b"", f"message {index}: the payload is not empty")
    require(initiator.handshake_finished and responder.handshake_finished, "the handshake did not finish")
    require(i_state.rs.public_bytes == r_public, "the initiator saw another responder static key")
    require(r_state.rs.public_bytes == i_public, "the responder saw another initiator static key")
    compare("handshake hash (initiator)", initiator.get_handshake_hash(), v.hex("handshake-hash", 64))
    compare("handshake hash (responder)", responder.get_handshake_hash(), v.hex("handshake-hash", 64))
    # The session keys work both ways.
    require(responder.decrypt(initiator.encrypt(b"ping")) == b"ping", "transport initiator -> responder")
    require(initiator.decrypt(responder.encrypt(b"pong")) == b"pong", "transport responder -> initiator")
    # With another network key the responder refuses message 3 (§8.1).
    other = NoiseConnection.from_name(NOISE_NAME)
    other.set_as_responder()
    other.set_psks(psk=subkey(bytes(b ^ 0xFF for b in network_key(v)), "session-psk"))
    other.set_prologue(NOISE_PROLOGUE)
    other.set_keypair_from_private_bytes(Keypair.STATIC, r_static)
    other.set_keypair_from_private_bytes(Keypair.EPHEMERAL, v.hex("responder-ephemeral", 32))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        other.start_handshake()
    try:
        other.read_message(v.hex("message1"))
        other.write_message(b"")
        other.read_message(v.hex("message3"))
        raise VectorError("a responder with another network key accepted message 3")
    except VectorError:
        raise
    except Exception:  # noqa: BLE001 - the refusal expected
        pass
    return "3 messages, hash, transport, wrong key refused"


# --------------------------------------------------------------------------------------------
# Private conversations (§11), from the text: ids, the key schedule, sealed boxes (PyNaCl's
# SealedBox), XChaCha20-Poly1305 (two constructions), padding written here from ISO/IEC 7816-4.

GROUP_DOMAIN = b"lanchat/group/v1\x00"                           # §11.1
DIRECT_DOMAIN = b"lanchat/direct/v1\x00"
META_LABEL = b"lanchat/group-meta/v1"                            # §11.3
WRITE_LABEL = b"lanchat/sealed-write/v1"                         # §11.4


def b64url(data):
    import base64
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def group_id(creator, salt):
    return "g_" + b64url(blake2b_256(GROUP_DOMAIN + creator + salt)[:15])


def direct_id(a, b):
    low, high = sorted([a, b])
    return "d_" + b64url(blake2b_256(DIRECT_DOMAIN + low + high)[:15])


def bucket(length):
    for size in (256, 1024, 4096, 16384, 65536, 262144):
        if size > length:
            return size
    return (length // 65536 + 1) * 65536


def pad(data):
    size = bucket(len(data))
    return data + b"\x80" + b"\x00" * (size - len(data) - 1)


def open_box(box, seed):
    import nacl.public
    private, _ = x25519_from_ed25519(seed)
    try:
        return nacl.public.SealedBox(nacl.public.PrivateKey(private)).decrypt(box)
    except Exception:  # noqa: BLE001
        return None


def check_private_key_record(v):
    creator_seed, member_seed, outsider_seed = v.hex("seed", 32), v.hex("member-seed", 32), bytes([3]) * 32
    creator, member = ed25519_public(creator_seed), ed25519_public(member_seed)
    salt, epoch, key = v.hex("salt", 32), v.uint("epoch"), v.hex("epoch-key", 32)
    cid = group_id(creator, salt)
    compare("conversation", cid.encode(), v.text("conversation").encode())
    compare("direct", direct_id(creator, member).encode(), v.text("direct").encode())
    import base64
    members = []
    for text in (m.strip() for m in v.text("members").split(",")):
        decoded = base64.urlsafe_b64decode(text + "=")
        require(len(decoded) == 32 and b64url(decoded) == text, f"{text} is not a user id (§1)")
        members.append(decoded)
    members.sort()
    meta = encode([v.text("title"), members, False, None])
    compare("meta", meta, v.hex("meta"))
    given = v.hex("record")
    record = check_record_bytes(given, "record")
    body = record[4]
    require(record[1] == 5 and record[2] == creator, "not a key record by the creator")
    require(body[0] == cid and body[1] == epoch and body[2] == salt, "conversation, epoch or salt differ")
    opened = [k for k in (open_box(b, member_seed) for b in body[3]) if k is not None]
    require(opened == [key], "no box opens to the epoch key for the member")
    require(all(open_box(b, outsider_seed) is None for b in body[3]), "a box opens for the outsider")
    require(any(open_box(b, creator_seed) == key for b in body[3]), "no box opens for the creator")
    nonce = v.hex("meta-nonce", 24)
    ad = META_LABEL + b"\x00" + cid.encode() + struct.pack(">Q", epoch) + creator
    sealed = nonce + xchacha_seal(blake2b_256(META_LABEL, key=key), nonce, meta, ad)
    compare("sealed meta", sealed, body[4])
    built = build_record(creator_seed, 5, v.uint("clock"), [cid, epoch, salt, body[3], sealed])
    compare("record", built, given)
    compare("id (BLAKE2b-256 of the record)", blake2b_256(built), v.hex("id", 32))
    RECORDS_BY_NAME[v.name] = given
    return f"{len(body[3])} sealed keys, {len(given)} bytes"


def check_private_write(v):
    seed = v.hex("seed", 32)
    author = ed25519_public(seed)
    cid, epoch_id, key, nonce = v.text("conversation"), v.hex("epoch-id", 32), v.hex("epoch-key", 32), v.hex("nonce", 24)
    try:
        pairs = json.loads(v.text("pairs"))
    except json.JSONDecodeError as exc:
        raise VectorError(f"pairs are not JSON: {exc}")
    body = [[path, wire_value(value)] for path, value in pairs]
    check_write(body)
    for path, _ in body:
        keys = path.split("/")[1:]
        require(len(keys) >= 3 and keys[0] == "conversations" and keys[1] == cid, f"{path} is outside the conversation")
    plain = encode(body)
    compare("plaintext", plain, v.hex("plaintext"))
    require(bucket(len(plain)) == v.uint("padded-size"), "padded-size is not the bucket of the plaintext")
    ad = WRITE_LABEL + b"\x00" + cid.encode() + epoch_id + author
    write_key = blake2b_256(WRITE_LABEL, key=key)
    sealed = nonce + xchacha_seal(write_key, nonce, pad(plain), ad)
    built = build_record(seed, 6, v.uint("clock"), [cid, epoch_id, sealed])
    given = v.hex("record")
    compare("record", built, given)
    record = check_record_bytes(given, "record")
    compare("id (BLAKE2b-256 of the record)", blake2b_256(built), v.hex("id", 32))
    # A member opens it; any other key does not.
    opened = xchacha_open(write_key, record[4][2][:24], record[4][2][24:], ad)
    require(opened[:len(plain)] == plain and opened[len(plain)] == 0x80 and not any(opened[len(plain) + 1:]), "bad padding")
    try:
        xchacha_open(blake2b_256(WRITE_LABEL, key=bytes(32)), record[4][2][:24], record[4][2][24:], ad)
        raise VectorError("the ciphertext opens under another key")
    except VectorError as exc:
        require("does not open" in str(exc), str(exc))
    RECORDS_BY_NAME[v.name] = given
    return f"bucket {len(opened)}, {len(given)} bytes"


def check_sealed_file(v):
    """§11.7: segments of 65,520 bytes, each sealed under the file key with its index as nonce
    and its index and last flag in the associated data; photoKey is the key in base64url."""
    key, plain = v.hex("file-key", 32), v.hex("plaintext")
    require(len(plain) >= 1, "an empty file is not sealed")
    segment = 65520
    sealed = b""
    starts = list(range(0, len(plain), segment))
    for i, start in enumerate(starts):
        last = i == len(starts) - 1
        nonce = i.to_bytes(8, "big") + bytes(16)
        ad = b"lanchat/sealed-file/v1" + b"\x00" + i.to_bytes(8, "big") + (b"\x01" if last else b"\x00")
        sealed += xchacha_seal(key, nonce, plain[start:start + segment], ad)
    compare("sealed", sealed, v.hex("sealed"))
    photo_key = base64.urlsafe_b64encode(key).rstrip(b"=").decode()
    require(photo_key == v.text("photo-key"), f"photo-key is {photo_key}")
    # Cut short (the last flag no longer matches) or under another key, it does not open.
    for what, k, data, last in (("another key", bytes(32), sealed, 1), ("a wrong last flag", key, sealed, 0)):
        try:
            xchacha_open(k, bytes(24), data, b"lanchat/sealed-file/v1" + b"\x00" + bytes(8) + bytes([last]))
            raise VectorError(f"the sealed file opens with {what}")
        except VectorError as exc:
            require("does not open" in str(exc), str(exc))
    return f"{len(starts)} segment(s), {len(sealed)} bytes"


SEALED_LIVE_LABEL = b"lanchat/sealed-live/v1"                  # §11.8
SEALED_LIVE_BUCKETS = (64, 576)


def check_sealed_live(v):
    """§11.8: a private conversation's live value, its plaintext [kind, value] padded to 64 or 576
    bytes, sealed under the epoch key's live subkey, bound to every signed field, then signed."""
    seed = v.hex("seed", 32)
    author = ed25519_public(seed)
    author_id = b64url(author)
    instance, version = v.hex("instance", 8), v.uint("version")
    cid, epoch_id, key, nonce = v.text("conversation"), v.hex("epoch-id", 32), v.hex("epoch-key", 32), v.hex("nonce", 24)
    path, value_text = v.text("path"), v.text("value")
    json.loads(value_text)
    segments = [s for s in path.split("/") if s]
    kinds = {"typingIndicator": 0, "readReceipts": 1}
    require(len(segments) == 4 and segments[0] == "conversations" and segments[1] == cid and segments[2] in kinds
            and segments[3] == author_id, "the path is not the author's typing flag or receipt in the conversation")
    plain = encode([kinds[segments[2]], value_text.encode()])
    compare("plaintext", plain, v.hex("plaintext"))
    size = next(b for b in SEALED_LIVE_BUCKETS if b > len(plain))
    padded = plain + b"\x80" + bytes(size - len(plain) - 1)
    ad = SEALED_LIVE_LABEL + b"\x00" + cid.encode() + epoch_id + author + instance + struct.pack(">Q", version)
    live_key = blake2b_256(SEALED_LIVE_LABEL, key=key)
    ciphertext = nonce + xchacha_seal(live_key, nonce, padded, ad)
    unsigned = [author, instance, version, cid, epoch_id, ciphertext]
    built = encode(unsigned + [ed25519_sign(seed, SEALED_LIVE_LABEL + b"\x00" + encode(unsigned))])
    given = v.hex("live")
    compare("live", built, given)
    fields = decode(given, "live")
    require(isinstance(fields, list) and len(fields) == 7, "a sealed live value is a 7-item array")
    VerifyKey(fields[0]).verify(SEALED_LIVE_LABEL + b"\x00" + encode(fields[:6]), fields[6])
    opened = xchacha_open(live_key, fields[5][:24], fields[5][24:], ad)
    require(opened == padded, "the ciphertext does not open to the padded plaintext")
    # Bound to the author: another author's ad does not open it.
    try:
        xchacha_open(live_key, fields[5][:24], fields[5][24:], ad.replace(author, bytes(32)))
        raise VectorError("the ciphertext opens under another author")
    except VectorError as exc:
        require("does not open" in str(exc), str(exc))
    return f"{len(given)} bytes, bucket {size}, signature verified"


CHECKS = {
    "sealed-live": check_sealed_live,
    "sealed-file": check_sealed_file,
    "private-key-record": check_private_key_record,
    "private-write": check_private_write,
    "record": check_record,
    "manifest-record": check_manifest_record,
    "file-record": check_file_record,
    "large-write-record": check_large_write_record,
    "export": check_export,
    "network": check_network,
    "live": check_live,
    "datagram": check_datagram,
    "session": check_session,
    "handshake": check_handshake,
    "reconcile": check_reconcile,
}


def check_all(vectors):
    """Checks the vectors in order; returns one (name, error or None, note) per vector."""
    RECORDS_BY_NAME.clear()
    RECONCILE_MESSAGES.clear()
    LIVE_BY_NAME.clear()
    results, names = [], set()
    for v in vectors:
        v.read = {"name", "kind"}
        try:
            require(not v.problems, "; ".join(v.problems))
            require("name" in v.fields, "no name")
            require(v.name not in names, "a second vector with this name")
            names.add(v.name)
            kind = v.fields.get("kind")
            require(kind in CHECKS, f"unknown kind {kind!r}: this checker has no check for it")
            note = CHECKS[kind](v)
            unread = v.unread()
            require(not unread, f"fields no check read: {', '.join(unread)}")
            results.append((v.name, None, f"{kind}: {note}"))
        except VectorError as exc:
            results.append((v.name, str(exc), None))
        except Exception as exc:  # noqa: BLE001 - a crash of a check is a failure, not a pass
            results.append((v.name, f"{type(exc).__name__}: {exc}", None))
    return results


def _altered(value):
    """value with its last letter or digit changed (a hex digit stays a hex digit)."""
    for i in range(len(value) - 1, -1, -1):
        c = value[i]
        if c in "0123456789abcdef":
            return value[:i] + format(int(c, 16) ^ 1, "x") + value[i + 1:]
        if c.isalnum():
            return value[:i] + ("a" if c == "z" else chr(ord(c) + 1)) + value[i + 1:]
    return value + "x"


def _list_mutants(v):
    """For a reconcile vector: each list of items with its last item dropped, with an item
    added, and (where order matters) reversed; the last message dropped."""
    mutants = []
    if v.fields.get("kind") != "reconcile":
        return mutants
    for key in ("a", "b", "have", "need"):
        if key not in v.fields:
            continue
        items = [x.strip() for x in v.fields[key].split(",") if x.strip()]
        if items:
            mutants.append((f"'{key}' without its last item", {**v.fields, key: ", ".join(items[:-1])}))
        mutants.append((f"'{key}' with item 999 added", {**v.fields, key: ", ".join(items + ["999"])}))
        if key in ("have", "need") and len(items) > 1:
            mutants.append((f"'{key}' reversed", {**v.fields, key: ", ".join(reversed(items))}))
    last = max((int(k[8:]) for k in v.fields if re.fullmatch(r"message-[1-9][0-9]*", k)), default=0)
    if last > 1:
        mutants.append(("its last message dropped", {k: x for k, x in v.fields.items() if k != f"message-{last}"}))
    return mutants


def reconcile_self_test():
    """§8.3 cases no vector holds, checked against the rules themselves: malformed messages
    §8.3.1 refuses (and well-formed ones it accepts), and rounds large enough for §8.3.4's
    60,000-byte limit (and smaller limits) that must end with exactly the differences and no
    message above the limit. Returns the failures."""
    failures = []
    bound = varint(VECTOR_ITEM_CLOCK + 1) + b"\x01\xab"
    refused = {
        "version 62": "62",
        "a range ending inside its bound": "61" + varint(5).hex(),
        "a range ending before its mode": "61" + bound.hex(),
        "a varint of 11 bytes": "61" + "81" * 10 + "00" + "0000",
        "a varint not minimal": "61" + "8001" + "0000",
        "a varint beyond 64 bits": "61" + "82808080808080808000" + "0000",
        "a prefix of 33 bytes": "61" + "0221" + "00" * 33 + "00",
        "mode 3": "61" + "0000" + "03",
        "an IdList count beyond the bytes left": "61" + "0000" + "0201" + "00" * 31,
        "a fingerprint cut short": "61" + "0000" + "01" + "00" * 15,
        "bounds that do not increase": "61" + bound.hex() + "00" + "01" + "0100" + "00",
        "equal bounds ab and ab00": "61" + bound.hex() + "00" + "01" + "0200ab00" + "00",
        "a first bound at the bottom": "61" + "0100" + "00",
        "a delta beyond 2^64 - 1": "61" + "0300" + "00" + varint(2 ** 64 - 1).hex() + "00" + "00",
    }
    for label, hexed in refused.items():
        try:
            parse_negentropy(bytes.fromhex(hexed))
            failures.append(f"§8.3.1 parser accepts {label}")
        except NegentropyRefusal:
            pass
    accepted = {
        "an empty message": "61",
        "infinity repeated": "61" + "0000" + "00" + "0000" + "0200",
        "a delta landing on 2^64 - 1": "61" + "0200" + "00" + varint(2 ** 64 - 1).hex() + "00" + "00",
        "an infinity bound with a prefix": "61" + "0001ff" + "00",
    }
    for label, hexed in accepted.items():
        try:
            parse_negentropy(bytes.fromhex(hexed))
        except NegentropyRefusal as exc:
            failures.append(f"§8.3.1 parser refuses {label}: {exc}")
    if NegSide([], False).answer(bytes.fromhex("62")) != bytes([NEG_VERSION]):
        failures.append("a responder does not answer version 62 with 61")
    # §8.3.4's two cases the vectors do not reach. The responder holding items 0 .. 3999 gets a
    # Skip whose bound has a 20-byte prefix (31 bytes written, so s = 32) and an IdList to
    # infinity: it lists floor((60,000 - 32 - (43 + 1 + 2 + 19)) / 32) = 1871 of its ids.
    held = [vector_item(i) for i in range(4000)]
    skip_to = (held[1000][0], held[1000][1][:20])
    writer = NegWriter()
    writer.range(skip_to, NEG_SKIP)
    writer.range(NEG_TOP, NEG_IDLIST, [])
    ranges = parse_negentropy(NegSide(held, False).answer(bytes(writer.out)))
    if [(r[0], r[1]) for r in ranges[:1]] != [(skip_to, NEG_SKIP)] or len(ranges) != 3 or len(ranges[1][2]) != 1871:
        failures.append("§8.3.4: a responder's IdList after a Skip does not list 1871 ids")
    # A responder holding items 0, 2, ..., 3152 gets an IdList range around each of them, then
    # one to infinity where it holds nothing: after 1577 ranges of 38 bytes (the first 44) the
    # message has 59,933 bytes, the formula leaves room for no id, and the empty list (4 bytes)
    # is written all the same, as it stays within 59,937.
    held = [vector_item(2 * k) for k in range(1577)]
    writer = NegWriter()
    for timestamp, _ in held:
        writer.range((timestamp + 1, b""), NEG_IDLIST, [])
    writer.range(NEG_TOP, NEG_IDLIST, [])
    reply = NegSide(held, False).answer(bytes(writer.out))
    if len(reply) != 59_937 or not reply.endswith(bytes.fromhex("00000200")):
        failures.append(f"§8.3.4: an empty IdList with no room for an id is not written ({len(reply)} bytes)")
    universe = [vector_item(i) for i in range(12_000)]
    shuffled = list(range(len(universe)))
    cases = [  # (seed, common, only the initiator's, only the responder's, limit)
        (1, 3000, 0, 6000, NEG_WRITE_LIMIT), (2, 0, 6000, 0, NEG_WRITE_LIMIT),
        (3, 4000, 2000, 2000, NEG_WRITE_LIMIT), (4, 2000, 400, 900, 2000), (5, 0, 40, 3000, 1000),
    ]
    for seed, common, n_a, n_b, limit in cases:
        random.Random(seed).shuffle(shuffled)
        chosen = [universe[i] for i in shuffled[:common + n_a + n_b]]
        both, only_a, only_b = chosen[:common], chosen[common:common + n_a], chosen[common + n_a:]
        try:
            messages, have, need = neg_round(both + only_a, both + only_b, limit=limit)
        except VectorError as exc:
            failures.append(f"round {seed} (limit {limit}): {exc}")
            continue
        if max(map(len, messages)) > limit:
            failures.append(f"round {seed}: a message of {max(map(len, messages))} bytes, above {limit}")
        if sorted(have) != sorted(i for _, i in only_a) or sorted(need) != sorted(i for _, i in only_b):
            failures.append(f"round {seed} (limit {limit}): have and need are not the differences")
    return failures


def self_test(vectors):
    """Mutants of every vector, each of which the checks must refuse: every field altered in its
    last letter or digit, every field removed, an unknown field added, an unknown kind, and for
    reconciliations their lists changed. Returns the mutants that passed (there should be none)
    and how many were tried."""
    survivors, tried = [], 0
    for index, v in enumerate(vectors):
        mutants = [(f"kind '{v.fields.get('kind')}x'", {**v.fields, "kind": f"{v.fields.get('kind')}x"}),
                   ("an unknown field", {**v.fields, "no-such-field": "00"})] + _list_mutants(v)
        for key in v.fields:
            if key == "name":
                continue
            mutants.append((f"'{key}' removed", {k: x for k, x in v.fields.items() if k != key}))
            if key != "kind":
                mutants.append((f"'{key}' altered", {**v.fields, key: _altered(v.fields[key])}))
        for label, fields in mutants:
            tried += 1
            copies = [Vector(fields, v.line) if i == index else Vector(dict(o.fields), o.line, o.problems)
                      for i, o in enumerate(vectors)]
            if check_all(copies)[index][1] is None:
                survivors.append(f"{v.name} with {label}")
    return survivors, tried


def main():
    args = [a for a in sys.argv[1:] if a != "--self-test"]
    default = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "Protocol.md")
    path = args[0] if args else default
    vectors = read_vectors(open(path, encoding="utf-8").read())
    passed = failed = 0
    if not vectors:
        print(f"FAIL {path}: no vector blocks")
        failed += 1
    for name, error, note in check_all(vectors):
        if error is None:
            passed += 1
            print(f"ok   {name} ({note})")
        else:
            failed += 1
            print(f"FAIL {name}: {error}")
    if "--self-test" in sys.argv[1:] and vectors:
        # Only meaningful when the document passes: then every mutant must fail.
        survivors, tried = self_test(vectors)
        if survivors:
            failed += 1
            print(f"FAIL self-test: {len(survivors)} of {tried} altered vectors passed: " + "; ".join(survivors))
        else:
            passed += 1
            print(f"ok   self-test ({tried} altered vectors, each refused)")
        failures = reconcile_self_test()
        if failures:
            failed += 1
            print("FAIL self-test of §8.3: " + "; ".join(failures))
        else:
            passed += 1
            print("ok   self-test of §8.3 (malformed messages refused, rounds under the size limit)")
    print(f"protocol vectors: {passed} passed, {failed} failed")
    return 0 if failed == 0 and passed > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
