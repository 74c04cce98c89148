"""Live-node fuzzing: hostile traffic against a running lanchat node on loopback, then checks.

Started by Tools/fuzz-live (which provides the Python environment). For --seconds it sends, all at
once from several threads:
  - mutated sealed beacons to the node's discovery port, and mutated sealed `push` datagrams to its
    session UDP port (sealed with the real datagram key, so the CBOR inside is reached);
  - mutated Noise handshake messages (and bad length prefixes) to its session TCP port;
  - post-handshake frames: a real Noise_XXpsk3 handshake with the network PSK (Protocol.md §6, §8),
    a valid hello, then mutated hello/reconcile/records/want frames and framing;
  - malformed HTTP requests to its local API.
Then it checks: the process is alive, the API answers, `lanchat check` of its data (store, chunk index,
every chunk) is ok, a message still syncs to and from a second, clean peer, and the RSS stayed under a bound.

It also checks that the fuzzing reached what it aimed at: every handshake meant to succeed did (the
node's own hello, decrypted, names the node), the post-handshake frames went into an established
session (a valid `reconcile` sent after our hello, ahead of the mutated frames, got its reply), and
every handshake with a wrong PSK or a mutated third message was refused (the node closed without a
transport message).

The node bans a misbehaving peer for 60 s (by identity after its hello, by address and port
before), never its whole host; still, every fuzz connection and datagram comes from its own
loopback address (127.x.y.z, never 127.0.0.1) and every session from a fresh identity, and the
clean peer talks from 127.0.0.1.
"""
import argparse
import base64
import collections
import hashlib
import json
import os
import random
import shutil
import socket
import sqlite3
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

import cbor2
import nacl.bindings as sodium
from noise.connection import Keypair, NoiseConnection

NOISE_NAME = b"Noise_XXpsk3_25519_ChaChaPoly_BLAKE2b"
PROLOGUE = b"lanchat/session/v1"
DATAGRAM_AD = b"lanchat/datagram/v1"
ANSWER_TIMEOUT = 10   # seconds the node has to send its hello or answer a probe
EMPTY_SET = bytes([0x61, 0x00, 0x00, 0x02, 0x00])   # Negentropy v1: the whole range, an empty id list


def blake2b_256(data, key=b""):
    return hashlib.blake2b(data, digest_size=32, key=key).digest()


def network_key(name):
    """Protocol.md §6: the public network NAME."""
    return blake2b_256(b"lanchat/network/v1\x00" + name.encode())


def subkey(key, label):
    return blake2b_256(label.encode(), key=key)


def self_test():
    """The derivations against Protocol.md's vector for the network `lanchat`."""
    key = network_key("lanchat")
    assert key.hex() == "c527a70a1a855339d2e6d6f685485037f4b2b8d1f8463d2f1f176aef9f27f8e2"
    assert subkey(key, "lanchat/datagram/v1").hex() == "b9e0eddd86814e787cf1982bd86e1d16b514963e262c5c75bbfb071b3066eb94"
    assert subkey(key, "lanchat/session-psk/v1").hex() == "dad7d2a5f5160667b3b822b918899c15607369ab02e812b2cac376a8fdb4c6e8"


def canonical(item):
    return cbor2.dumps(item, canonical=True)


class Identity:
    """An Ed25519 identity and its X25519 form (libsodium's conversion, as §8.1 says)."""

    def __init__(self, rng):
        seed = bytes(rng.getrandbits(8) for _ in range(32))
        self.public, self.secret = sodium.crypto_sign_seed_keypair(seed)
        self.x25519_secret = sodium.crypto_sign_ed25519_sk_to_curve25519(self.secret)

    def record(self, path, value, clock=None):
        """A valid signed record (§3) writing one pair."""
        if clock is None:
            clock = int(time.time() * 1000) << 16
        unsigned = [1, 1, self.public, clock, [[path, value]]]
        message = b"lanchat/record/v1\x00" + canonical(unsigned)
        signature = sodium.crypto_sign(message, self.secret)[:64]
        return canonical(unsigned + [signature])


class Mutator:
    def __init__(self, rng):
        self.rng = rng

    def bytes(self, n):
        return bytes(self.rng.getrandbits(8) for _ in range(n))

    def mutate(self, data, rounds=None):
        rng = self.rng
        data = bytearray(data)
        for _ in range(rounds or rng.randint(1, 4)):
            choice = rng.randrange(8)
            if choice == 0 and data:
                data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
            elif choice == 1 and data:
                data[rng.randrange(len(data))] = rng.choice([0, 0xFF, 0x7F, 0x80, 0x18, 0x19, 0x1A, 0x1B, 0x5F, 0x9F, 0xBF, 0xFF])
            elif choice == 2 and data:
                del data[rng.randrange(len(data)):]
            elif choice == 3:
                pos = rng.randrange(len(data) + 1)
                data[pos:pos] = self.bytes(rng.randint(1, 16))
            elif choice == 4 and len(data) > 2:
                a = rng.randrange(len(data))
                b = min(len(data), a + rng.randint(1, 32))
                data[a:b] = b""
            elif choice == 5 and data:
                a = rng.randrange(len(data))
                data[a:a] = data[a:a + rng.randint(1, 64)] * rng.randint(1, 8)
            elif choice == 6 and len(data) >= 4:
                pos = rng.randrange(len(data) - 3)
                data[pos:pos + 4] = struct.pack(">I", rng.choice([0, 1, 0x7FFFFFFF, 0xFFFFFFFF, 2097152, 2097153, 65535]))
            else:
                data += self.bytes(rng.randint(0, 8))
        return bytes(data)

    def value(self, depth=0):
        """A random CBOR-able value of lanchat's shapes."""
        rng = self.rng
        kind = rng.randrange(9 if depth < 3 else 6)
        if kind == 0:
            return rng.choice([0, 1, 23, 24, 255, 2**53, 2**53 + 1, -1, -(2**53), 2**64 - 1])
        if kind == 1:
            return rng.choice([0.5, 1.5, -0.0, 1e300, float("inf"), float("nan")])
        if kind == 2:
            return rng.choice(["", "a", "é", "e\u0301", "/a/b", "x" * rng.randint(0, 2000), "\u0000"])
        if kind == 3:
            return self.bytes(rng.choice([0, 8, 16, 31, 32, 33, 64]))
        if kind == 4:
            return rng.choice([None, True, False])
        if kind == 5:
            return rng.randint(0, 2**64 - 1)
        if kind == 6:
            return [self.value(depth + 1) for _ in range(rng.randint(0, 5))]
        if kind == 7:
            return {rng.choice(["a", "b", "senderId", "0", "1", "é", "e\u0301"]): self.value(depth + 1) for _ in range(rng.randint(0, 4))}
        return cbor2.CBORTag(rng.randint(0, 300), self.value(depth + 1))

    def cbor_item(self, fields):
        """`fields` with one field replaced, dropped or added, encoded (canonical when possible)."""
        rng = self.rng
        fields = list(fields)
        choice = rng.randrange(4)
        if choice == 0 and fields:
            fields[rng.randrange(len(fields))] = self.value()
        elif choice == 1 and fields:
            del fields[rng.randrange(len(fields))]
        elif choice == 2:
            fields.insert(rng.randrange(len(fields) + 1), self.value())
        try:
            encoded = canonical(fields)
        except Exception:
            encoded = canonical([0])
        return self.mutate(encoded) if rng.random() < 0.3 else encoded


class LiveFuzzer:
    def __init__(self, args):
        self.args = args
        self.rng = random.Random(args.seed)
        self.key = network_key("lanchat")
        self.datagram_key = subkey(self.key, "lanchat/datagram/v1")
        self.psk = subkey(self.key, "lanchat/session-psk/v1")
        self.stats = {"beacons": 0, "pushes": 0, "handshakes": 0, "sessions": 0, "frames": 0, "http": 0,
                      "established": 0, "probes": 0, "delivered": 0, "meant to fail": 0, "refused": 0}
        self.problems = collections.Counter()   # what went wrong where something was meant to work
        self.lock = threading.Lock()
        self.source_counter = 0
        self.rss_samples = []

    def count(self, name, n=1):
        with self.lock:
            self.stats[name] += n

    def problem(self, what, error):
        with self.lock:
            self.problems["%s: %s" % (what, error if isinstance(error, str) else type(error).__name__)] += 1

    def source_address(self):
        """A fresh loopback address per connection, so no ban of an earlier one gets in the way."""
        with self.lock:
            self.source_counter += 1
            n = self.source_counter
        return "127.%d.%d.%d" % (1 + n // 64000 % 254, n // 250 % 256, 2 + n % 250)

    # -- datagrams -----------------------------------------------------------------------------

    def seal(self, type_byte, plaintext, rng):
        nonce = bytes(rng.getrandbits(8) for _ in range(24))
        sealed = sodium.crypto_aead_xchacha20poly1305_ietf_encrypt(plaintext, DATAGRAM_AD + bytes([type_byte]), nonce, self.datagram_key)
        return bytes([type_byte]) + nonce + sealed

    def fuzz_datagrams(self, deadline, seed):
        rng = random.Random(seed)
        m = Mutator(rng)
        me = Identity(rng)
        sock = None
        sent = 0
        while time.time() < deadline:
            if sent % 50 == 0:
                if sock:
                    sock.close()
                sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                sock.bind((self.source_address(), 0))
            sent += 1
            beacon = [1, me.public, m.bytes(8), rng.choice([1, self.args.port, 65535]), rng.randint(0, 2**64 - 1), m.bytes(16)]
            record = me.record("/fuzz/live/%d" % rng.randrange(1000), rng.choice(["x", 1, True, {"a": "b"}]))
            choice = rng.randrange(6)
            if choice == 0:
                packet = self.seal(1, m.cbor_item(beacon), rng)
            elif choice == 1:
                packet = self.seal(2, m.cbor_item([2, m.mutate(record) if rng.random() < 0.7 else record]), rng)
            elif choice == 2:
                packet = m.mutate(self.seal(rng.choice([1, 2]), canonical(beacon if rng.random() < 0.5 else [2, record]), rng))
            elif choice == 3:
                packet = self.seal(rng.randrange(256), canonical(beacon), rng)
            elif choice == 4:
                packet = m.bytes(rng.choice([0, 1, 25, 41, 200, 1200, 1201, 1400]))
            else:
                packet = self.seal(2, canonical([2, record]), rng)  # a valid push: reaches ingest
            port = self.args.discovery_port if rng.random() < 0.5 else self.args.port
            try:
                sock.sendto(packet[:65000], ("127.0.0.1", port))
            except OSError:
                pass
            self.count("beacons" if port == self.args.discovery_port else "pushes")
            if sent % 4 == 0:
                time.sleep(0.002)  # about 1000 datagrams a second, so the other fuzzers get the node too
        if sock:
            sock.close()

    # -- session TCP ---------------------------------------------------------------------------

    def connect(self):
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind((self.source_address(), 0))
        sock.settimeout(2)
        sock.connect(("127.0.0.1", self.args.port))
        return sock

    @staticmethod
    def read_exact(sock, n):
        data = b""
        while len(data) < n:
            chunk = sock.recv(n - len(data))
            if not chunk:
                raise ConnectionError("closed")
            data += chunk
        return data

    def read_noise(self, sock):
        length = struct.unpack(">H", self.read_exact(sock, 2))[0]
        return self.read_exact(sock, length)

    def send_frames(self, sock, noise, frames):
        """Frames (§8.2) as one byte stream in Noise transport messages of at most 65519 bytes."""
        stream = b"".join(struct.pack(">I", len(f)) + f for f in frames)
        for offset in range(0, len(stream), 65519):
            message = noise.encrypt(stream[offset:offset + 65519])
            sock.sendall(struct.pack(">H", len(message)) + message)

    def next_message(self, sock, noise, buffer, timeout):
        """The node's next session message (§8.2), decoded; `buffer` (a bytearray) keeps the
        decrypted stream between calls. Raises on a timeout, a close or bytes that do not decrypt."""
        deadline = time.time() + timeout
        while True:
            if len(buffer) >= 4:
                length = struct.unpack(">I", buffer[:4])[0]
                if len(buffer) >= 4 + length:
                    body = bytes(buffer[4:4 + length])
                    del buffer[:4 + length]
                    return cbor2.loads(body)
            remaining = deadline - time.time()
            if remaining <= 0:
                raise TimeoutError("no message within %d s" % timeout)
            sock.settimeout(remaining)
            buffer += noise.decrypt(self.read_noise(sock))

    def established(self, sock, identity):
        """A handshake meant to succeed, then the node's hello: returns (noise, buffer) once the
        node's first transport message decrypted into a hello naming the node."""
        noise = self.handshake(sock, identity)
        buffer = bytearray()
        hello = self.next_message(sock, noise, buffer, ANSWER_TIMEOUT)
        if not (isinstance(hello, list) and len(hello) == 5 and hello[0] == 1):
            raise ValueError("first message is not a hello")
        if hello[1] != self.args.node_author:
            raise ValueError("hello names another author")
        return noise, buffer

    def handshake(self, sock, identity):
        noise = NoiseConnection.from_name(NOISE_NAME)
        noise.set_as_initiator()
        noise.set_psks(psk=self.psk)
        noise.set_prologue(PROLOGUE)
        noise.set_keypair_from_private_bytes(Keypair.STATIC, identity.x25519_secret)
        noise.start_handshake()
        m1 = noise.write_message()
        sock.sendall(struct.pack(">H", len(m1)) + m1)
        noise.read_message(self.read_noise(sock))
        m3 = noise.write_message()
        sock.sendall(struct.pack(">H", len(m3)) + m3)
        return noise

    def fuzz_handshakes(self, deadline, seed):
        rng = random.Random(seed)
        m = Mutator(rng)
        while time.time() < deadline:
            try:
                sock = self.connect()
            except OSError:
                time.sleep(0.05)
                continue
            self.count("handshakes")
            try:
                choice = rng.randrange(5)
                if choice == 0:
                    body = m.bytes(rng.choice([0, 15, 16, 32, 48, 49, 96, 200]))
                    sock.sendall(m.mutate(struct.pack(">H", len(body)) + body))
                elif choice == 1:
                    sock.sendall(m.bytes(rng.randint(1, 3000)))
                else:
                    identity = Identity(rng)
                    noise = NoiseConnection.from_name(NOISE_NAME)
                    noise.set_as_initiator()
                    noise.set_psks(psk=self.psk if choice != 2 else m.bytes(32))
                    noise.set_prologue(PROLOGUE)
                    noise.set_keypair_from_private_bytes(Keypair.STATIC, identity.x25519_secret)
                    noise.start_handshake()
                    m1 = noise.write_message()
                    if choice == 3:
                        m1 = m.mutate(m1)
                    sock.sendall(struct.pack(">H", len(m1) & 0xFFFF) + m1)
                    if choice != 3:
                        noise.read_message(self.read_noise(sock))
                        m3 = original = noise.write_message()
                        if choice == 4:
                            m3 = m.mutate(m3)
                        sock.sendall(struct.pack(">H", len(m3) & 0xFFFF) + m3)
                        if choice == 2 or m3 != original:
                            # A wrong PSK or a changed third message: the node must close
                            # without a single transport message.
                            self.count("meant to fail")
                            verdict = self.refused(sock)
                            if verdict == "refused":
                                self.count("refused")
                            else:
                                self.problem("handshake meant to fail (%s)" % ("wrong PSK" if choice == 2 else "mutated message 3"), verdict)
                            continue
                try:
                    sock.settimeout(0.2)
                    sock.recv(4096)
                except OSError:
                    pass
            except Exception:
                pass
            finally:
                sock.close()

    def refused(self, sock):
        """'refused' when the node closes the connection without sending anything, else what it did."""
        sock.settimeout(ANSWER_TIMEOUT)
        try:
            data = sock.recv(4096)
        except socket.timeout:
            return "neither answered nor closed within %d s" % ANSWER_TIMEOUT
        except ConnectionResetError:
            return "refused"
        return "refused" if not data else "answered with %d bytes" % len(data)

    def fuzz_sessions(self, deadline, seed):
        rng = random.Random(seed)
        m = Mutator(rng)
        while time.time() < deadline:
            identity = Identity(rng)
            try:
                sock = self.connect()
            except OSError:
                time.sleep(0.05)
                continue
            # Every handshake here is meant to succeed: right PSK, a fresh valid identity.
            self.count("sessions")
            try:
                noise, received = self.established(sock, identity)
            except Exception as error:
                self.problem("handshake meant to succeed", error)
                sock.close()
                continue
            self.count("established")
            try:
                # Our hello (mostly), with a valid `reconcile` whose reply shows that frames reach
                # the established session; then mutated frames.
                hello = [1, identity.public, m.bytes(8), rng.randint(0, 100), m.bytes(16)]
                frames = []
                if rng.random() < 0.9:
                    self.count("probes")
                    try:
                        self.send_frames(sock, noise, [canonical(hello), canonical([2, EMPTY_SET])])
                        while True:
                            answer = self.next_message(sock, noise, received, ANSWER_TIMEOUT)
                            if isinstance(answer, list) and len(answer) == 2 and answer[0] == 3 and isinstance(answer[1], bytes):
                                break
                        self.count("delivered")
                    except Exception as error:
                        self.problem("frames after the handshake", error)
                        continue
                record = identity.record("/fuzz/session/%d" % rng.randrange(1000), "v%d" % rng.randrange(1000))
                for _ in range(rng.randint(1, 12)):
                    choice = rng.randrange(8)
                    if choice == 0:
                        frames.append(m.cbor_item(hello))
                    elif choice == 1:
                        fingerprint = bytes([0x61, 0x00, 0x00, 0x01]) + m.bytes(16)
                        negentropy = m.mutate(rng.choice([EMPTY_SET, fingerprint])) if rng.random() < 0.7 else rng.choice([EMPTY_SET, fingerprint])
                        frames.append(canonical([rng.choice([2, 2, 3]), negentropy]))
                    elif choice == 2:
                        frames.append(canonical([4, [m.mutate(record) if rng.random() < 0.5 else record for _ in range(rng.randint(0, 4))]]))
                    elif choice == 3:
                        frames.append(canonical([5, [m.bytes(32) for _ in range(rng.randint(0, 64))]]))
                    elif choice == 4:
                        frames.append(m.cbor_item([rng.randint(1, 5), m.value()]))
                    else:
                        frames.append(m.mutate(canonical([4, [record]])))
                stream = b"".join(struct.pack(">I", len(f)) + f for f in frames)
                if rng.random() < 0.2:
                    stream = m.mutate(stream)
                self.count("frames", len(frames))
                offset = 0
                while offset < len(stream):
                    size = rng.choice([1, 7, 100, 4096, 65519])
                    chunk = stream[offset:offset + size]
                    offset += size
                    message = noise.encrypt(chunk)
                    if rng.random() < 0.02:
                        message = m.mutate(message)
                    sock.sendall(struct.pack(">H", len(message) & 0xFFFF) + message)
                # Read what the node answers until it closes or goes quiet.
                sock.settimeout(0.3)
                while sock.recv(65536):
                    pass
            except Exception:
                pass
            finally:
                sock.close()

    def probe_backpressure(self, seconds):
        """A peer that asks for records and never reads: how far does the node's memory grow?
        Stores 2000 records over one session, then sends `want`s for all of them for `seconds`."""
        rng = random.Random(7)
        identity = Identity(rng)
        sock = self.connect()
        noise = self.handshake(sock, identity)
        records = [identity.record("/probe/%d" % i, "x" * 200) for i in range(2000)]
        ids = [blake2b_256(r) for r in records]
        def send(frame):
            self.send_frames(sock, noise, [frame])
        send(canonical([1, identity.public, bytes(8), 0, bytes(16)]))
        send(canonical([4, records]))
        time.sleep(2)
        sock.settimeout(10)
        deadline = time.time() + seconds
        wants = 0
        while time.time() < deadline:
            try:
                send(canonical([5, ids]))
                wants += 1
            except OSError:
                break
        sock.close()
        return wants

    # -- HTTP ----------------------------------------------------------------------------------

    def fuzz_http(self, deadline, seed):
        rng = random.Random(seed)
        m = Mutator(rng)
        templates = [
            b"GET /fuzz.json?auth=owner HTTP/1.1\r\nHost: h\r\n\r\n",
            b"PUT /fuzz/http.json?auth=owner HTTP/1.1\r\nHost: h\r\nContent-Length: 11\r\n\r\n{\"a\":[1,2]}",
            b"PATCH /fuzz.json HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer owner\r\nContent-Length: 15\r\n\r\n{\"x/y\":1,\"z\":2}",
            b"POST /fuzz/list.json?auth=owner HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n4\r\n\"hi\"\r\n0\r\n\r\n",
            b"GET /fuzz.json?auth=owner&orderBy=%22n%22&limitToFirst=2&startAt=1 HTTP/1.1\r\nHost: h\r\n\r\n",
            b"GET /.lanchat/status?auth=owner HTTP/1.1\r\nHost: h\r\n\r\n",
            b"GET /fuzz.json?auth=owner HTTP/1.1\r\nHost: h\r\nAccept: text/event-stream\r\n\r\n",
            b"DELETE /fuzz/http.json?auth=owner HTTP/1.1\r\nHost: h\r\n\r\n",
            b"PUT /fuzz/big.json?auth=owner HTTP/1.1\r\nHost: h\r\nContent-Length: 99999999999\r\n\r\n{",
            b"GET /" + b"a/" * 3000 + b".json?auth=owner HTTP/1.1\r\nHost: h\r\n\r\n",
        ]
        while time.time() < deadline:
            try:
                sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                sock.bind((self.source_address(), 0))
                sock.settimeout(1)
                sock.connect(("127.0.0.1", self.args.api_port))
            except OSError:
                time.sleep(0.05)
                continue
            self.count("http")
            try:
                request = rng.choice(templates)
                if rng.random() < 0.8:
                    request = m.mutate(request, rng.randint(1, 6))
                if rng.random() < 0.2:
                    request += rng.choice(templates)  # pipelined
                sock.sendall(request)
                sock.settimeout(0.1)
                while sock.recv(65536):
                    pass
            except Exception:
                pass
            finally:
                sock.close()

    # -- the run -------------------------------------------------------------------------------

    def sample_rss(self, pid, deadline):
        while time.time() < deadline:
            rss = read_status(pid)
            if rss:
                self.rss_samples.append(rss[0])
            time.sleep(0.5)

    def run(self, pid):
        deadline = time.time() + self.args.seconds
        workers = [
            (self.fuzz_datagrams, 1), (self.fuzz_handshakes, 1), (self.fuzz_sessions, 2), (self.fuzz_http, 2),
        ]
        threads = [threading.Thread(target=self.sample_rss, args=(pid, deadline), daemon=True)]
        for function, count in workers:
            for _ in range(count):
                threads.append(threading.Thread(target=function, args=(deadline, self.rng.getrandbits(64)), daemon=True))
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(self.args.seconds + 30)


def read_status(pid):
    """(VmRSS, VmHWM) in KiB, or None when the process is gone."""
    try:
        with open("/proc/%d/status" % pid) as f:
            fields = dict(line.split(":", 1) for line in f if ":" in line)
        return int(fields["VmRSS"].split()[0]), int(fields["VmHWM"].split()[0])
    except (OSError, KeyError, ValueError):
        return None


def free_port(kind=socket.SOCK_STREAM):
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(condition, seconds):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if condition():
            return True
        time.sleep(0.2)
    return condition()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=20)
    parser.add_argument("--lanchat", default=".build/debug/lanchat")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--rss-limit-mb", type=int, default=512, help="bound on the node's peak RSS")
    parser.add_argument("--keep", action="store_true", help="keep the data directories")
    parser.add_argument("--probe-backpressure", type=int, default=0, metavar="SECONDS",
                        help="also run a peer that sends wants and never reads, for SECONDS (not part of the default run)")
    args = parser.parse_args()
    if args.seed is None:
        args.seed = random.randrange(2**32)
    self_test()
    lanchat = os.path.abspath(args.lanchat)
    work = tempfile.mkdtemp(prefix="lanchat-fuzz-live-")
    target, clean = os.path.join(work, "target"), os.path.join(work, "clean")
    args.port, args.api_port = free_port(), free_port()
    args.discovery_port = free_port(socket.SOCK_DGRAM)
    peer_port = free_port()
    processes = []
    passed = failed = 0

    def check(name, ok, detail=""):
        nonlocal passed, failed
        if ok:
            passed += 1
            print("ok     %s%s" % (name, (": " + detail) if detail else ""))
        else:
            failed += 1
            print("FAILED %s%s" % (name, (": " + detail) if detail else ""))

    def cli(*argv, data=target, timeout=30):
        return subprocess.run([lanchat, *argv, "--data", data], capture_output=True, text=True, timeout=timeout)

    try:
        for directory, name in ((target, "Fuzz Target"), (clean, "Clean Peer")):
            result = cli("init", "--name", name, data=directory)
            if result.returncode != 0:
                print("Error: lanchat init failed: " + result.stderr.strip(), file=sys.stderr)
                print("fuzz-live: 0 passed, 1 failed")
                return 1
            if directory == target:
                # `init` prints the user id: the node's Ed25519 key in unpadded base64url (§1).
                args.node_author = base64.urlsafe_b64decode(result.stdout.strip() + "=")
        log = open(os.path.join(work, "target.log"), "w")
        node = subprocess.Popen([lanchat, "run", "--data", target, "--listen", "127.0.0.1:%d" % args.port,
                                 "--api", "127.0.0.1:%d" % args.api_port, "--api-token", "owner",
                                 "--discovery-port", str(args.discovery_port), "--discovery-interface", "lo"],
                                stdout=log, stderr=subprocess.STDOUT)
        processes.append(node)
        if not wait_for(lambda: os.path.exists(os.path.join(target, "node.json")), 15):
            check("node started", False, "no node.json after 15 s")
            raise SystemExit
        start_rss = read_status(node.pid)
        print("fuzz-live: node pid %d, session port %d, discovery port %d, API port %d, seed %d, %d s"
              % (node.pid, args.port, args.discovery_port, args.api_port, args.seed, args.seconds), file=sys.stderr)
        fuzzer = LiveFuzzer(args)
        began = time.time()
        fuzzer.run(node.pid)
        elapsed = time.time() - began
        print("fuzz-live: sent in %.1f s: %s" % (elapsed, ", ".join("%s %d" % kv for kv in fuzzer.stats.items())), file=sys.stderr)
        time.sleep(1)
        if args.probe_backpressure:
            wants = fuzzer.probe_backpressure(args.probe_backpressure)
            status = read_status(node.pid)
            print("fuzz-live: backpressure probe: %d wants of 2000 ids sent without reading; node RSS now %d MiB, peak %d MiB"
                  % (wants, status[0] // 1024, status[1] // 1024) if status else "node gone", file=sys.stderr)

        # 0. The fuzzing reached its targets.
        stats, problems = fuzzer.stats, fuzzer.problems
        def why(prefix):
            found = ["%s (%d)" % (k, n) for k, n in sorted(problems.items()) if k.startswith(prefix)]
            return ("; " + ", ".join(found)) if found else ""
        check("handshakes meant to succeed succeeded", stats["sessions"] > 0 and stats["established"] == stats["sessions"],
              "%d of %d: the node's hello arrived and named it%s" % (stats["established"], stats["sessions"], why("handshake meant to succeed")))
        check("frames delivered in established sessions", stats["probes"] > 0 and stats["delivered"] == stats["probes"],
              "%d of %d probe reconciles answered%s" % (stats["delivered"], stats["probes"], why("frames after")))
        check("handshakes meant to fail were refused", stats["meant to fail"] > 0 and stats["refused"] == stats["meant to fail"],
              "%d of %d (wrong PSK or mutated message 3) closed without a transport message%s"
              % (stats["refused"], stats["meant to fail"], why("handshake meant to fail")))
        # 1. Alive.
        check("node alive", node.poll() is None, "exit status %s" % node.returncode if node.poll() is not None else "pid %d" % node.pid)
        # 2. The API answers.
        def api_get(path):
            request = urllib.request.Request("http://127.0.0.1:%d%s" % (args.api_port, path), headers={"Authorization": "Bearer owner"})
            with urllib.request.urlopen(request, timeout=5) as response:
                return response.status, response.read()
        try:
            status, body = api_get("/fuzz.json?shallow=true")
            check("API answers", status == 200, "GET /fuzz.json -> %d (%d bytes)" % (status, len(body)))
        except Exception as error:
            check("API answers", False, str(error))
        # 3. The store is whole: `lanchat check` (SQLite's integrity check of the store and the
        # chunk index, every chunk hashed against its address).
        try:
            db = sqlite3.connect("file:%s?mode=ro" % os.path.join(target, "store.sqlite"), uri=True, timeout=10)
            records = db.execute("SELECT count(*) FROM records").fetchone()[0]
            db.close()
            result = subprocess.run([lanchat, "check", "--data", target], capture_output=True, text=True, timeout=60)
            check("lanchat check", result.returncode == 0 and result.stdout.strip() == "ok",
                  "%s, %d records stored" % ((result.stdout + result.stderr).strip().replace("\n", "; "), records))
        except Exception as error:
            check("lanchat check", False, str(error))
        # 4. A message still syncs both ways with a clean peer (which talks from 127.0.0.1).
        peer = subprocess.Popen([lanchat, "run", "--data", clean, "--listen", "127.0.0.1:%d" % peer_port, "--no-discovery",
                                 "--peer", "127.0.0.1:%d" % args.port], stdout=open(os.path.join(work, "clean.log"), "w"),
                                stderr=subprocess.STDOUT)
        processes.append(peer)
        token = "%08x" % random.getrandbits(32)
        cli("send", "general", "to clean peer " + token)
        cli("send", "general", "to target " + token, data=clean)
        has = lambda data, text: text in cli("messages", "general", data=data).stdout
        check("sync target -> clean peer", wait_for(lambda: has(clean, "to clean peer " + token), 30))
        check("sync clean peer -> target", wait_for(lambda: has(target, "to target " + token), 30))
        # 5. Memory stayed bounded.
        status = read_status(node.pid)
        peak = max([status[1] if status else 0] + fuzzer.rss_samples)
        check("RSS bounded", status is not None and peak <= args.rss_limit_mb * 1024,
              "start %d MiB, peak %d MiB, now %d MiB (bound %d MiB)"
              % ((start_rss or (0, 0))[0] // 1024, peak // 1024, (status or (0, 0))[0] // 1024, args.rss_limit_mb))
        if failed:
            print("--- target node log (last 20 lines)", file=sys.stderr)
            with open(os.path.join(work, "target.log")) as f:
                sys.stderr.writelines(f.readlines()[-20:])
            print("(reproduce with --seed %d)" % args.seed, file=sys.stderr)
    except SystemExit:
        pass
    finally:
        for process in processes:
            if process.poll() is None:
                process.terminate()
                try:
                    process.wait(10)
                except subprocess.TimeoutExpired:
                    process.kill()
        if args.keep:
            print("fuzz-live: kept " + work, file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)
    print("fuzz-live: %d passed, %d failed" % (passed, failed))
    return 0 if failed == 0 and passed > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
