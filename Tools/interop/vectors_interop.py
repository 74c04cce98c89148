#!/usr/bin/env python3
"""Checks every vector of Protocol.md §10 with code lanchat did not write.

For each ```vector block the expected bytes are rebuilt from the grammar of Protocol.md and the
vector's inputs, with independent libraries: cbor2 (and a deterministic encoder written here from
§2, each checking the other), PyNaCl and `cryptography` for Ed25519 (two libraries), hashlib and
PyNaCl for BLAKE2b, PyNaCl's XChaCha20-Poly1305 and a second construction (HChaCha20 written here
from draft-irtf-cfrg-xchacha, then `cryptography`'s ChaCha20-Poly1305), and `noiseprotocol` for
the handshake. Nothing here calls lanchat.

A vector whose kind this script does not know, or that has a field no check reads, fails: a new
kind of vector cannot pass without being checked.

Prints one line per vector (`ok NAME` or `FAIL NAME: WHY`), then `N passed, M failed`; exits 1 on
any failure.

Usage: vectors_interop.py [PROTOCOL_MD]     (default: Protocol.md next to Tools/)
"""
import hashlib
import json
import math
import os
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


def check_write(body):
    require(isinstance(body, list) and 1 <= len(body) <= MAX_PAIRS, "a write of 1 to 1000 pairs")
    paths = []
    for pair in body:
        require(isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], str), "a pair is not [path, value]")
        require(valid_path(pair[0]), f"invalid path {pair[0]!r}")
        check_value(pair[1], pair[0], True)
        paths.append(pair[0].encode())
    for a, b in zip(paths, paths[1:]):
        require(a < b, "paths not in strictly increasing bytewise order")
    for a in paths:
        for b in paths:
            require(not (a != b and (a == b"" or b.startswith(a + b"/"))), "one path is an ancestor of another")


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


BODY_CHECKS = {1: check_write, 2: check_manifest, 3: check_file}


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


def datagram_plaintext(v):
    """The plaintext of §7's grammar for the fields the vector has, and its type."""
    forms = {
        ("count", "fingerprint", "instance", "port", "seed"): 1,   # beacon
        ("record",): 2,                                            # push
    }
    present = tuple(sorted(k for k in v.fields if k not in ("name", "kind", "network", "network-key", "nonce", "plaintext", "datagram")))
    require(present in forms, f"no datagram of §7 has the fields {', '.join(present)}")
    kind = forms[present]
    if kind == 1:
        return 1, [1, ed25519_public(v.hex("seed", 32)), v.hex("instance", 8), v.uint("port"),
                   v.uint("count"), v.hex("fingerprint", 16)]
    record = v.hex("record")
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


CHECKS = {
    "record": check_record,
    "manifest-record": check_manifest_record,
    "file-record": check_file_record,
    "export": check_export,
    "network": check_network,
    "datagram": check_datagram,
    "session": check_session,
    "handshake": check_handshake,
}


def check_all(vectors):
    """Checks the vectors in order; returns one (name, error or None, note) per vector."""
    RECORDS_BY_NAME.clear()
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


def self_test(vectors):
    """Mutants of every vector, each of which the checks must refuse: every field altered in its
    last letter or digit, every field removed, an unknown field added, an unknown kind. Returns
    the mutants that passed (there should be none) and how many were tried."""
    survivors, tried = [], 0
    for index, v in enumerate(vectors):
        mutants = [(f"kind '{v.fields.get('kind')}x'", {**v.fields, "kind": f"{v.fields.get('kind')}x"}),
                   ("an unknown field", {**v.fields, "no-such-field": "00"})]
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
    print(f"protocol vectors: {passed} passed, {failed} failed")
    return 0 if failed == 0 and passed > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
