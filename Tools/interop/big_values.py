"""Firebase's size limits against two running lanchat nodes joined on loopback.

Usage: python big_values.py API_A API_B PID_A [PID_B]   (APIs as HOST:PORT; both nodes run with --api-token owner)

On node A: a 10 MB string written by a plain REST PUT, and a 16 MB update of 100,000 children
written by firebase-admin (which speaks REST). On node B, polled while it syncs: the update
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
sys.exit(tally.finish())
