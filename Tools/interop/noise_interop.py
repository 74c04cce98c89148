#!/usr/bin/env python3
"""Interop check: lanchat's Swift Noise_XXpsk3_25519_ChaChaPoly_BLAKE2b against Python's
`noiseprotocol`, in both roles, plus a mismatched network key that both sides must refuse.

The Swift side is the NoiseInterop executable; it speaks 2-byte big-endian length-prefixed
frames on stdin/stdout. Prints one line per case and a closing "noise interop: N passed, M failed".
"""
import argparse
import os
import subprocess
import sys
import threading
import warnings

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
from noise.connection import Keypair, NoiseConnection

NAME = b"Noise_XXpsk3_25519_ChaChaPoly_BLAKE2b"
TIMEOUT = 60


class InteropFailure(Exception):
    pass


def public_key(private: bytes) -> bytes:
    key = X25519PrivateKey.from_private_bytes(private).public_key()
    return key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


class SwiftPeer:
    """The Swift executable as a subprocess, with frame I/O and a watchdog against hangs."""

    def __init__(self, binary, role, psk, static, prologue):
        args = [binary, "--role", role, "--psk", psk.hex(), "--static", static.hex(),
                "--prologue", prologue.hex(), "--name", "swift", "--peer", "python"]
        self.proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE)
        self.stderr = b""
        self._reader = threading.Thread(target=self._drain_stderr, daemon=True)
        self._reader.start()
        self._watchdog = threading.Timer(TIMEOUT, self.proc.kill)
        self._watchdog.start()

    def _drain_stderr(self):
        self.stderr = self.proc.stderr.read()

    def send(self, data: bytes):
        try:
            self.proc.stdin.write(len(data).to_bytes(2, "big") + bytes(data))
            self.proc.stdin.flush()
        except BrokenPipeError:
            raise InteropFailure("swift side closed its input")

    def receive(self) -> bytes:
        header = self.proc.stdout.read(2)
        if len(header) < 2:
            raise InteropFailure("swift side closed the connection")
        length = int.from_bytes(header, "big")
        body = self.proc.stdout.read(length)
        if len(body) < length:
            raise InteropFailure("swift side closed mid-frame")
        return body

    def finish(self):
        """Closes our end and returns (exit code, stderr text)."""
        try:
            self.proc.stdin.close()
        except BrokenPipeError:
            pass
        code = self.proc.wait()
        self._watchdog.cancel()
        self._reader.join()
        return code, self.stderr.decode(errors="replace")


def python_side(role, psk, static, prologue, peer: SwiftPeer):
    """Runs the Python half of a session; returns the remote static key it saw.
    Raises on any failure."""
    conn = NoiseConnection.from_name(NAME)
    conn.set_as_initiator() if role == "initiator" else conn.set_as_responder()
    conn.set_psks(psk=psk)
    conn.set_prologue(prologue)
    conn.set_keypair_from_private_bytes(Keypair.STATIC, static)
    conn.start_handshake()
    # noiseprotocol drops its handshake state when the handshake finishes; keep a reference to
    # read the remote static key afterwards.
    handshake = conn.noise_protocol.handshake_state
    greeting, expected = b"hello from python", b"hello from swift"
    for index in (1, 2, 3):
        writing = (index % 2 == 1) == (role == "initiator")
        if writing:
            peer.send(conn.write_message(b"" if index == 1 else greeting))
        else:
            payload = conn.read_message(peer.receive())
            if bytes(payload) != (b"" if index == 1 else expected):
                raise InteropFailure(f"handshake message {index}: unexpected payload {bytes(payload)!r}")
    if not conn.handshake_finished:
        raise InteropFailure("python handshake did not finish")
    if role == "initiator":
        peer.send(conn.encrypt(b"ping from python"))
        reply = conn.decrypt(peer.receive())
        if reply != b"pong from swift":
            raise InteropFailure(f"unexpected transport message {reply!r}")
    else:
        ping = conn.decrypt(peer.receive())
        if ping != b"ping from swift":
            raise InteropFailure(f"unexpected transport message {ping!r}")
        peer.send(conn.encrypt(b"pong from python"))
    return handshake.rs.public_bytes


def session(binary, python_role, python_psk, swift_psk):
    """One session; returns (python error or None, python's view of the remote static,
    swift exit code, swift stderr, python static, swift static)."""
    python_static, swift_static = os.urandom(32), os.urandom(32)
    prologue = b"lanchat interop"
    swift_role = "responder" if python_role == "initiator" else "initiator"
    peer = SwiftPeer(binary, swift_role, swift_psk, swift_static, prologue)
    error, remote = None, None
    try:
        remote = python_side(python_role, python_psk, python_static, prologue, peer)
    except Exception as exc:  # noqa: BLE001 - any failure of the Python side is a result here
        error = f"{type(exc).__name__}: {exc}"
    code, stderr = peer.finish()
    return error, remote, code, stderr, public_key(python_static), public_key(swift_static)


def positive(binary, python_role):
    psk = os.urandom(32)
    error, remote, code, stderr, python_public, swift_public = session(binary, python_role, psk, psk)
    problems = []
    if error:
        problems.append(f"python failed: {error}")
    if code != 0:
        problems.append(f"swift exited {code}")
    if remote is not None and remote != swift_public:
        problems.append("python saw the wrong remote static key")
    if f"remote static: {python_public.hex()}" not in stderr:
        problems.append("swift did not report python's static key")
    return problems, stderr


def negative(binary):
    """Different network keys, in both arrangements. Both sides must fail, and for the right
    reason: XXpsk3 mixes the psk in at message 3, so the responder must reject that message and
    the initiator must fail when the responder hangs up instead of answering."""
    problems, log = [], ""
    for python_role in ("initiator", "responder"):
        error, _, code, stderr, _, _ = session(binary, python_role, os.urandom(32), os.urandom(32))
        log += stderr
        if error is None:
            problems.append(f"python as {python_role} accepted a wrong network key")
        if code == 0:
            problems.append(f"swift as the {python_role}'s peer accepted a wrong network key")
        if "remote static:" in stderr:
            problems.append(f"swift (peer of the python {python_role}) reported a peer despite the wrong key")
        if python_role == "initiator":
            if "decryption failed" not in stderr or "handshake message 3" not in stderr:
                problems.append("swift responder did not reject handshake message 3 as undecryptable")
            if error is not None and "closed" not in error:
                problems.append(f"python initiator failed for another reason: {error}")
        else:
            if error is not None and "NoiseInvalidMessage" not in error and "InvalidTag" not in error:
                problems.append(f"python responder failed for another reason: {error}")
            if "peer closed" not in stderr:
                problems.append("swift initiator did not fail on the responder hanging up")
    return problems, log


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--binary", required=True, help="path to the NoiseInterop executable")
    parser.add_argument("--verbose", action="store_true", help="show the Swift side's stderr")
    args = parser.parse_args()
    warnings.simplefilter("ignore")

    cases = [
        ("python initiator, swift responder", lambda: positive(args.binary, "initiator")),
        ("swift initiator, python responder", lambda: positive(args.binary, "responder")),
        ("mismatched network keys fail on both sides", lambda: negative(args.binary)),
    ]
    passed = failed = 0
    for name, case in cases:
        problems, stderr = case()
        if problems:
            failed += 1
            print(f"FAIL {name}: " + "; ".join(problems))
            print("  swift stderr: " + stderr.strip().replace("\n", "\n  swift stderr: "))
        else:
            passed += 1
            print(f"ok   {name}")
            if args.verbose:
                print("  swift stderr: " + stderr.strip().replace("\n", "\n  swift stderr: "))
    print(f"noise interop: {passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
