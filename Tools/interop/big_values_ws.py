"""Firebase's size limits through the websocket protocol the SDKs speak (`/.ws?v=5`), against two
running lanchat nodes joined on loopback.

Usage: python big_values_ws.py API_A API_B PID_A      (APIs as HOST:PORT; both nodes run with --api-token owner)

On node A, over a websocket as the SDKs write: a 10 MB string (`p`) and a 16 MB update of
100,000 children (`m`), each message split into 16 KB pieces as the SDKs split them. On node B:
a websocket listen on each location sees the write arrive in one change (the listen's cache
holds none of the update's children or all of them, never part; the string whole or not at
all); both read back exactly over REST and by a websocket `g`. Node A's own memory must come
back near where it was. Prints "big values (websocket): N passed, M failed" and the figures.
"""
import asyncio
import http.client
import json
import sys
import time

import websockets

from proc_status import mebibytes
from tally import Tally

api_a, api_b, pid_a = sys.argv[1], sys.argv[2], int(sys.argv[3])
tally = Tally("big values (websocket)", detail_limit=300)
check = tally.check
PIECE = 16384
SLOW = 600  # seconds a large request may take on a debug build


def memory(field):
    """A figure of node A's /proc status, in MiB."""
    return mebibytes(pid_a, field)


def rest_get(api, path):
    host, port = api.rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=SLOW)
    conn.request("GET", path, headers={"Authorization": "Bearer owner"})
    response = conn.getresponse()
    data = response.read()
    conn.close()
    return response.status, data


class Client:
    """The little of an SDK client this needs: requests with numbers, split messages both ways,
    and every data push of the server kept in order."""

    def __init__(self, api):
        self.api = api
        self.number = 0
        self.waiting = {}
        self.pushes = []
        self.pushed = asyncio.Event()

    async def open(self):
        self.ws = await websockets.connect(f"ws://{self.api}/.ws?v=5&ns=lanchat", max_size=None, ping_interval=None)
        await self.ws.recv()  # the hello
        self.sending = asyncio.Lock()
        self.reader = asyncio.create_task(self.read())
        self.pinger = asyncio.create_task(self.keep_alive())
        status = await self.request("auth", {"cred": "owner"})
        assert status["s"] == "ok", status
        return self

    async def keep_alive(self):
        """The SDKs' keep-alive, a message `0` every 45 s: the node closes a websocket silent for
        120 s, as any idle connection."""
        while True:
            await asyncio.sleep(45)
            async with self.sending:
                await self.ws.send("0")

    async def read(self):
        count, parts = None, []
        try:
            async for text in self.ws:
                if count is None and len(text) <= 6 and text.isdigit():
                    count, parts = int(text), []
                    continue
                if count is not None:
                    parts.append(text)
                    if len(parts) < count:
                        continue
                    text, count = "".join(parts), None
                message = json.loads(text)
                if message.get("t") != "d":
                    continue
                data = message["d"]
                if "r" in data:
                    future = self.waiting.pop(data["r"], None)
                    if future and not future.done():
                        future.set_result(data["b"])
                else:
                    self.pushes.append((data["a"], data["b"]))
                    self.pushed.set()
        except websockets.ConnectionClosed:
            pass
        for future in self.waiting.values():
            if not future.done():
                future.set_exception(ConnectionError("closed"))

    async def request(self, action, body, timeout=30):
        self.number += 1
        future = asyncio.get_running_loop().create_future()
        self.waiting[self.number] = future
        text = json.dumps({"t": "d", "d": {"r": self.number, "a": action, "b": body}}, separators=(",", ":"))
        async with self.sending:  # a keep-alive never goes between the pieces of a message
            if len(text) <= PIECE:
                await self.ws.send(text)
            else:
                pieces = [text[i:i + PIECE] for i in range(0, len(text), PIECE)]
                await self.ws.send(str(len(pieces)))
                for piece in pieces:
                    await self.ws.send(piece)
        return await asyncio.wait_for(future, timeout)

    async def close(self):
        self.pinger.cancel()
        await self.ws.close()
        self.reader.cancel()


def children_after(pushes, path):
    """The number of children a listen of `path` shows after each of its pushes, in order."""
    counts, value = [], None
    for action, body in pushes:
        where = body["p"].strip("/")
        if where == path:
            if action == "d":
                value = body["d"]
            else:
                value = dict(value or {})
                for member, child in body["d"].items():
                    key = member.strip("/").split("/")[0]
                    if "/" in member.strip("/"):
                        value[key] = value.get(key, True)
                    elif child is None:
                        value.pop(key, None)
                    else:
                        value[key] = child
        elif where.startswith(path + "/"):
            key = where[len(path) + 1:].split("/")[0]
            value = dict(value or {})
            value[key] = body["d"] if where.count("/") == path.count("/") + 1 else value.get(key, True)
            if value[key] is None:
                del value[key]
        else:
            continue
        counts.append(len(value) if isinstance(value, dict) else 0)
    return counts


async def main():
    baseline = memory("RssAnon")
    writer = await Client(api_a).open()
    watcher = await Client(api_b).open()
    for path in ("ws/children", "ws/text"):
        status = await watcher.request("q", {"p": "/" + path, "h": ""}, timeout=SLOW)
        check(f"listen on B at /{path}", status["s"] == "ok", status)

    # A 16 MB update of 100,000 children, as one `m`.
    filler = "z" * 123
    update = {f"w{i:06d}": {"n": i, "text": filler} for i in range(100_000)}
    size = len(json.dumps(update).encode())
    check("the update is 16 MB", 15_500_000 <= size <= 16_000_000, size)
    started = time.monotonic()
    status = await writer.request("m", {"p": "/ws/children", "d": update}, timeout=SLOW)
    update_seconds = time.monotonic() - started
    check("m of a 16 MB update over the websocket", status["s"] == "ok", status)
    after_update = memory("RssAnon")

    # A 10 MB string, as one `p`.
    text = "".join(chr(0x61 + i % 26) for i in range(10_000_000))
    started = time.monotonic()
    status = await writer.request("p", {"p": "/ws/text", "d": text}, timeout=SLOW)
    string_seconds = time.monotonic() - started
    check("p of a 10 MB string over the websocket", status["s"] == "ok", status)

    # Node B's listens: each write arrives in one change, never in part.
    synced = time.monotonic()

    def arrived():
        return 100_000 in children_after(watcher.pushes, "ws/children") and any(
            body["p"].strip("/") == "ws/text" and body["d"] == text for _, body in watcher.pushes)

    deadline = time.monotonic() + SLOW
    while not arrived() and time.monotonic() < deadline:
        watcher.pushed.clear()
        try:
            await asyncio.wait_for(watcher.pushed.wait(), 5)
        except asyncio.TimeoutError:
            pass
    sync_seconds = time.monotonic() - synced
    counts = children_after(watcher.pushes, "ws/children")
    check("the update reached B's listen", 100_000 in counts, counts[:10])
    check("B's listen never showed part of the update", set(counts) <= {0, 100_000}, sorted(set(counts))[:10])
    # From none of the children to all of them in one push, and never back (a listen may be
    # sent its unchanged value again when something is written above it).
    check("B's listen saw the update arrive in one change", counts == sorted(counts) and counts[-1] == 100_000, counts[:10])
    texts = [body["d"] for _, body in watcher.pushes if body["p"].strip("/") == "ws/text"]
    check("B's listen saw the string whole", texts and all(t is None or t == text for t in texts) and texts[-1] == text,
          [None if t is None else len(t) for t in texts])

    # Read back on B, over REST and by a websocket `g`.
    status, data = rest_get(api_b, "/ws/children.json")
    check("the update read back exactly on B (REST)", status == 200 and json.loads(data) == update, len(data))
    status, data = rest_get(api_b, "/ws/text.json")
    check("the string read back exactly on B (REST)", status == 200 and json.loads(data) == text, len(data))
    reply = await watcher.request("g", {"p": "/ws/children"}, timeout=SLOW)
    check("the update read back exactly on B (g)", reply["s"] == "ok" and reply["d"] == update, reply.get("s"))
    reply = await watcher.request("g", {"p": "/ws/text"}, timeout=SLOW)
    check("the string read back exactly on B (g)", reply["s"] == "ok" and reply["d"] == text, reply.get("s"))
    await writer.close()
    await watcher.close()

    # Node A's own memory comes back near where it was (within 64 MiB).
    deadline = time.monotonic() + 60
    while memory("RssAnon") > baseline + 64 and time.monotonic() < deadline:
        await asyncio.sleep(0.2)
    settled = memory("RssAnon")
    check("node A's memory comes back near its baseline", settled <= baseline + 64,
          f"baseline {baseline:.0f} MiB, now {settled:.0f} MiB")
    print(f"big values (websocket): update of {size} bytes taken in {update_seconds:.1f} s, 10 MB string in "
          f"{string_seconds:.1f} s, both on B's listen after {sync_seconds:.1f} s more; node A's own memory (RssAnon) "
          f"{baseline:.0f} MiB before, {after_update:.0f} MiB right after the update, {settled:.0f} MiB settled")


asyncio.run(main())
sys.exit(tally.finish())
