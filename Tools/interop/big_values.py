"""Firebase's size limits against two running lanchat nodes joined on loopback.

Usage: python big_values.py API_A API_B PID_A [PID_B]   (APIs as HOST:PORT; both nodes run with --api-token owner)

On node A: a 10 MB string written by a plain REST PUT, and a 16 MB update of 100,000 children
written by firebase-admin (which speaks REST); then, by plain HTTP, bodies above the 16 MiB kept
in memory (spooled and streamed): a 64 MB PATCH of 100,000 children, with A's anonymous memory
during the request bounded, and a 64 MB PUT of one object, with its figure reported (its one
pair's fold is bounded by the streamed fold, not by this intake); with LANCHAT_BIG=1 also a PATCH near 256 MB. Each is read back
exactly on B. On node B, polled while it syncs: the update
shows none of its children or all of them, never part; then both read back exactly. Node A's
resident memory is sampled while it takes the update (its peak, VmHWM) and must come back near
where it was before. With PID_B, node B's peak resident memory (VmHWM, reset before each write
through /proc/PID/clear_refs) and CPU time are measured for each of the two writes it folds.
Prints "big values: N passed, M failed" and the figures measured.
"""
import http.client
import json
import os
import sys
import threading
import time

import firebase_admin
from firebase_admin import db

from proc_status import mebibytes
from tally import Tally

api_a, api_b, pid_a = sys.argv[1], sys.argv[2], int(sys.argv[3])
pid_b = int(sys.argv[4]) if len(sys.argv) > 4 else None
tally = Tally("big values", detail_limit=300)
check = tally.check
HEADERS = {"Authorization": "Bearer owner"}


def request(api, method, path, body=None):
    host, port = api.rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=900)
    conn.request(method, path, body=body, headers=HEADERS)
    response = conn.getresponse()
    data = response.read()
    conn.close()
    return response.status, data


def memory(field):
    """A figure of node A's /proc status, in MiB."""
    return mebibytes(pid_a, field)


def cpu_seconds(pid):
    """User plus system CPU time of process `pid` so far, in seconds."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class PeerFigures:
    """Node B's peak resident memory and CPU time over one write it takes, from `start`."""

    def start(self):
        if pid_b is None:
            return
        with open(f"/proc/{pid_b}/clear_refs", "w") as refs:
            refs.write("5")  # resets VmHWM to the present resident size
        self.rss = mebibytes(pid_b, "VmRSS")
        self.cpu = cpu_seconds(pid_b)

    def stop(self, what):
        if pid_b is None:
            return ""
        return (f"node B for {what}: resident peak (VmHWM) {mebibytes(pid_b, 'VmHWM'):.0f} MiB from {self.rss:.0f} MiB, "
                f"CPU {cpu_seconds(pid_b) - self.cpu:.2f} s; ")


def until(seconds, condition):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.2)
    return False


# Resident memory of its own (RssAnon): the store is read through a memory map, whose pages are
# the kernel's file cache (RssFile), shared and dropped under pressure.
baseline = memory("RssAnon")
baseline_rss = memory("VmRSS")

# Node B is polled from before the update until it shows it: it must show none of the update's
# children or all of them, never part.
counts = set()
stop = threading.Event()


def poll_b():
    while not stop.is_set():
        try:
            status, data = request(api_b, "GET", "/big/children.json?shallow=true")
        except OSError as exc:
            counts.add(f"error {exc}")
            time.sleep(0.5)
            continue
        value = json.loads(data) if status == 200 else "status"
        counts.add(f"status {status}" if value == "status" else (0 if value is None else len(value)))
        if value not in (None, "status") and len(value) == 100_000:
            return
        time.sleep(0.2)


poller = threading.Thread(target=poll_b, daemon=True)
poller.start()
sync_started = time.monotonic()

# A 16 MB update of 100,000 children by firebase-admin.
app = firebase_admin.initialize_app(options={"databaseURL": f"http://{api_a}/?ns=lanchat", "httpTimeout": 900}, name="a")
filler = "y" * 123
update = {f"c{i:06d}": {"n": i, "text": filler} for i in range(100_000)}
size = len(json.dumps(update).encode())
check("the update is 16 MB", 15_500_000 <= size <= 16_000_000, size)
before_peak = memory("VmHWM")
peer = PeerFigures()
peer.start()
started = time.monotonic()
db.reference("big/children", app=app).update(update)
write_seconds = time.monotonic() - started
peak = memory("VmHWM")
after_write = memory("RssAnon")
status, data = request(api_a, "GET", "/big/children.json?shallow=true")
check("the 100,000 children on A", status == 200 and len(json.loads(data)) == 100_000, len(data))

poller.join(timeout=max(1.0, 600 - (time.monotonic() - sync_started)))
stop.set()
sync_seconds = time.monotonic() - sync_started
peer_update = peer.stop("the update")
check("the update arrived on B", 100_000 in counts, sorted(map(str, counts)))
check("B never showed part of the update", counts <= {0, 100_000}, sorted(map(str, counts)))
status, data = request(api_b, "GET", "/big/children.json")
check("the 100,000 children read back exactly on B", status == 200 and json.loads(data) == update, len(data))
data = None

# A 10 MB string (Firebase's limit for a string) by a plain REST PUT.
text = "".join(chr(0x41 + i % 26) for i in range(10_000_000))
peer.start()
text_started = time.monotonic()
status, _ = request(api_a, "PUT", "/big/text.json?print=silent", json.dumps(text).encode())
check("PUT of a 10 MB string", status in (200, 204), status)
status, data = request(api_a, "GET", "/big/text.json")
check("the 10 MB string read back on A", status == 200 and json.loads(data) == text, len(data))


def b_has_text():
    status, data = request(api_b, "GET", "/big/text.json?shallow=true")
    return status == 200 and data != b"null"


check("the 10 MB string arrived on B", until(120, b_has_text))
text_seconds = time.monotonic() - text_started
peer_text = peer.stop("the string")
status, data = request(api_b, "GET", "/big/text.json")
check("the 10 MB string read back exactly on B", status == 200 and json.loads(data) == text)



class AnonSampler:
    """Node A's anonymous memory (RssAnon) sampled every 20 ms while a request runs: its peak."""

    def __enter__(self):
        self.peak = memory("RssAnon")
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()
        return self

    def run(self):
        while not self.stopped.is_set():
            self.peak = max(self.peak, memory("RssAnon"))
            time.sleep(0.02)

    def __exit__(self, *exc):
        self.stopped.set()
        self.thread.join()


def b_count(path, expected):
    status, data = request(api_b, "GET", path + ".json?shallow=true")
    return status == 200 and data != b"null" and len(json.loads(data)) == expected


def streamed_write(method, path, body, expected_children, what):
    """A REST write above 16 MiB on A by plain HTTP (spooled and streamed there), read back
    exactly on B; returns A's anonymous memory before and at its peak during the request."""
    came_back_before = until(60, lambda: memory("RssAnon") <= baseline + 64)
    before = memory("RssAnon")
    peer.start()
    started = time.monotonic()
    with AnonSampler() as sampler:
        status, _ = request(api_a, method, path + ".json?print=silent", body)
    taken = time.monotonic() - started
    check(f"{what} on A", status == 204 and came_back_before, status)
    arrived = until(600, lambda: b_count(path, expected_children))
    check(f"{what} arrived on B", arrived)
    synced = time.monotonic() - started
    peer_figures = peer.stop(what)
    status, data = request(api_b, "GET", path + ".json")
    check(f"{what} read back exactly on B", status == 200 and json.loads(data) == json.loads(body), len(data))
    data = None
    figures.append(f"{what} of {len(body) >> 20} MiB: taken by A in {taken:.1f} s, on B after {synced:.1f} s, "
                   f"A's RssAnon {before:.0f} MiB before, peak {sampler.peak:.0f} MiB (+{sampler.peak - before:.0f}); {peer_figures}")
    return before, sampler.peak


figures = []
# Above the 16 MiB a REST body is kept in memory: a PATCH of many children and a PUT of one
# object of 64 MB, spooled to a file on A as they arrive and encoded from it, never held whole.
filler = "z" * 600
patch = {f"p{i:06d}": {"n": i, "text": filler} for i in range(100_000)}
patch_body = json.dumps(patch).encode()
patch = None
check("the PATCH is 64 MB", 60_000_000 <= len(patch_body) <= 66_000_000, len(patch_body))
before, peak_patch = streamed_write("PATCH", "/big/patched", patch_body, 100_000, "a PATCH of 100,000 children")
patch_body = None
# Intake and encoding (spool, scratch file, chunks) and the fold of many small pairs, one at a
# time, hold far less than the body: bounded well below it.
check("A's memory during the 64 MB PATCH stays bounded (< 48 MiB above where it was)", peak_patch - before < 48,
      f"{peak_patch - before:.0f} MiB")
one = json.dumps({f"o{i:06d}": {"n": i, "text": filler} for i in range(100_000)}).encode()
streamed_write("PUT", "/big/object", one, 100_000, "a PUT of one object")
one = None
if os.environ.get("LANCHAT_BIG") == "1":
    # Firebase's limit for one REST write: 256 MB.
    big = json.dumps({f"b{i:06d}": {"n": i, "text": "w" * 1200} for i in range(200_000)}).encode()
    check("the large PATCH is under 256 MiB", len(big) <= 256 << 20, len(big))
    before, peak_big = streamed_write("PATCH", "/big/largest", big, 200_000, "a PATCH of 200,000 children")
    check("A's memory during the 256 MB PATCH stays bounded (< 64 MiB above where it was)", peak_big - before < 64,
          f"{peak_big - before:.0f} MiB")
    big = None

# Memory: node A's own memory comes back near where it was before the writes (within 64 MiB).
came_back = until(60, lambda: memory("RssAnon") <= baseline + 64)
settled = memory("RssAnon")
settled_rss = memory("VmRSS")
check("node A's memory comes back near its baseline", came_back, f"baseline {baseline:.0f} MiB, now {settled:.0f} MiB")

print(f"big values: update of {size} bytes taken in {write_seconds:.1f} s, on B after {sync_seconds:.1f} s; "
      f"string on B {text_seconds:.1f} s after its PUT; {peer_update}{peer_text}"
      f"node A's own memory (RssAnon) {baseline:.0f} MiB before, {after_write:.0f} MiB right after, {settled:.0f} MiB settled; "
      f"resident peak (VmHWM, file cache included) {peak:.0f} MiB (before the update {before_peak:.0f} MiB); "
      f"VmRSS {baseline_rss:.0f} MiB before, {settled_rss:.0f} MiB settled")
for line in figures:
    print(f"big values: {line}")
sys.exit(tally.finish())
