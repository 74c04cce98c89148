"""A Realtime Database websocket client, written from the Firebase Web SDK's protocol, against
two running lanchat nodes joined on loopback.

Usage: python realtime_interop.py API_A API_B TOKEN      (each API as HOST:PORT)

Exercises every request the SDKs send (s, auth/gauth, unauth, p/m with and without a hash,
g, q/n with query objects and tags, o/om/oc) and the server's pushes (d, m, c): three clients
racing a transaction with hash and datastale retries, an onDisconnect made when a socket drops
without a close and seen on the other node, a query window (orderByChild + limitToLast) kept
current as writes arrive on the other node, messages above 16 KB in both directions, and
requests refused without the token, and a typing flag set by a client of one node read over
REST and by a query listen on the other. Prints "realtime interop: N passed, M failed".
"""
import asyncio
import base64
import hashlib
import json
import struct
import sys
import time

import websockets

from tally import Tally

api_a, api_b, token = sys.argv[1], sys.argv[2], sys.argv[3]
tally = Tally("realtime interop")
check = tally.check
MAX_FRAME = 16384


# --- The SDK's hash of a value (what a transaction's write carries as "h") -------------------

def sdk_key_order(key):
    try:
        n = int(key)
        if str(n) == key and -(2 ** 31) <= n < 2 ** 31:
            return (0, n, "")
    except ValueError:
        pass
    return (1, 0, key.encode("utf-16-be"))


def b64sha1(text):
    return base64.b64encode(hashlib.sha1(text.encode("utf-8")).digest()).decode()


def sdk_hash(value):
    if value is None:
        return ""
    if isinstance(value, bool):
        return b64sha1("boolean:" + ("true" if value else "false"))
    if isinstance(value, (int, float)):
        return b64sha1("number:" + struct.pack(">d", float(value)).hex())
    if isinstance(value, str):
        return b64sha1("string:" + value)
    if isinstance(value, list):
        value = {str(i): v for i, v in enumerate(value) if v is not None}
    text = ""
    for key in sorted(value, key=sdk_key_order):
        child = sdk_hash(value[key])
        if child:
            text += ":" + key + ":" + child
    return b64sha1(text) if text else ""


# --- A client ---------------------------------------------------------------------------------

def segments(path):
    return [s for s in path.split("/") if s]


def set_at(root, path, value):
    """The cache after `value` is put at `path` (a list of keys) below `root`."""
    if not path:
        return value
    root = dict(root) if isinstance(root, dict) else {}
    child = set_at(root.get(path[0]), path[1:], value)
    if child is None or child == {}:
        root.pop(path[0], None)
    else:
        root[path[0]] = child
    return root or None


class Client:
    def __init__(self, api):
        self.api = api
        self.next_request = 0
        self.waiting = {}
        self.pushes = []          # every server push, in order: (action, body)
        self.caches = {}          # (path, tag) -> the value the listen shows
        self.changed = asyncio.Event()
        self.count_frames_seen = 0
        self.controls = []        # control messages after the hello

    async def open(self):
        self.ws = await websockets.connect(f"ws://{self.api}/.ws?v=5&ns=lanchat", max_size=None, ping_interval=None)
        hello = json.loads(await self.ws.recv())
        self.hello = hello
        self.reader = asyncio.create_task(self.read())
        return self

    async def read(self):
        pending = None
        parts = []
        try:
            async for text in self.ws:
                if pending is None and len(text) <= 6 and text.isdigit():
                    pending, parts = int(text), []
                    self.count_frames_seen += 1
                    continue
                if pending is not None:
                    parts.append(text)
                    if len(parts) < pending:
                        continue
                    text, pending = "".join(parts), None
                self.dispatch(json.loads(text))
        except websockets.ConnectionClosed:
            pass
        for future in self.waiting.values():
            if not future.done():
                future.set_exception(ConnectionError("closed"))

    def dispatch(self, message):
        if message["t"] == "c":
            self.controls.append(message["d"])
            self.changed.set()
            return
        assert message["t"] == "d", message
        data = message["d"]
        if "r" in data:
            future = self.waiting.pop(data["r"], None)
            if future and not future.done():
                future.set_result(data["b"])
            return
        action, body = data["a"], data["b"]
        self.pushes.append((action, body))
        if action in ("d", "m"):
            where = segments(body["p"])
            for (path, tag), value in list(self.caches.items()):
                if tag != body.get("t"):
                    continue
                listen_at = segments(path)
                if where[: len(listen_at)] == listen_at:
                    rel = where[len(listen_at):]
                    if action == "d":
                        self.caches[(path, tag)] = set_at(value, rel, body["d"])
                    else:
                        for k, v in body["d"].items():
                            value = set_at(value, rel + segments(k), v)
                        self.caches[(path, tag)] = value
                elif listen_at[: len(where)] == where and action == "d":
                    below = body["d"]
                    for key in listen_at[len(where):]:
                        below = below.get(key) if isinstance(below, dict) else None
                    self.caches[(path, tag)] = below
        self.changed.set()

    async def send(self, message):
        text = json.dumps(message, separators=(",", ":"))
        if len(text) <= MAX_FRAME:
            await self.ws.send(text)
            return
        pieces = [text[i:i + MAX_FRAME] for i in range(0, len(text), MAX_FRAME)]
        await self.ws.send(str(len(pieces)))
        for piece in pieces:
            await self.ws.send(piece)

    async def request(self, action, body):
        self.next_request += 1
        number = self.next_request
        future = asyncio.get_running_loop().create_future()
        self.waiting[number] = future
        await self.send({"t": "d", "d": {"r": number, "a": action, "b": body}})
        return await asyncio.wait_for(future, 20)

    async def auth(self, credential=None, action="gauth"):
        return await self.request(action, {"cred": token if credential is None else credential})

    async def listen(self, path, query=None, tag=None):
        body = {"p": path, "h": ""}
        if query:
            body["q"] = query
        if tag is not None:
            body["t"] = tag
        self.caches[(path, tag)] = None
        return await self.request("q", body)

    async def wait_for(self, predicate, timeout=15):
        deadline = time.monotonic() + timeout
        while not predicate():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            self.changed.clear()
            try:
                await asyncio.wait_for(self.changed.wait(), remaining)
            except asyncio.TimeoutError:
                return predicate()
        return True

    async def close(self):
        await self.ws.close()
        await self.reader


def mock_user_token(sub):
    def part(obj):
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")
    return part({"alg": "none", "type": "JWT"}) + "." + part({"sub": sub, "iat": int(time.time()), "user_id": sub}) + "."


# --- The checks -------------------------------------------------------------------------------

async def handshake_and_auth():
    c = await Client(api_a).open()
    hello = c.hello["d"]
    check("handshake is a control hello", c.hello["t"] == "c" and hello["t"] == "h", c.hello)
    h = hello["d"]
    check("handshake fields", h["v"] == "5" and isinstance(h["ts"], (int, float)) and abs(h["ts"] / 1000 - time.time()) < 60
          and h["h"] == api_a and isinstance(h["s"], str) and h["s"], h)
    check("stats before auth", (await c.request("s", {"c": {"sdk.js.10-0-0": 1}}))["s"] == "ok")
    check("an App Check token is taken and ignored", (await c.request("appcheck", {"token": "x"}))["s"] == "ok")
    r = await c.request("p", {"p": "/rt/denied", "d": 1})
    check("put refused without the token", r["s"] == "permission_denied", r)
    r = await c.request("g", {"p": "/rt", "q": {}})
    check("get refused without the token", r["s"] == "permission_denied", r)
    r = await c.listen("/rt")
    check("listen refused without the token", r["s"] == "permission_denied", r)
    r = await c.auth("wrong-token")
    check("a wrong token is refused", r["s"] == "invalid_token", r)
    r = await c.auth(mock_user_token("someone-else"), action="auth")
    check("a mock user token for someone else is refused", r["s"] == "invalid_token", r)
    r = await c.auth(mock_user_token(token), action="auth")
    check("a mock user token carrying the token is accepted", r["s"] == "ok", r)
    r = await c.request("p", {"p": "/rt/ok", "d": {"x": 1}})
    check("put after auth", r["s"] == "ok", r)
    r = await c.request("g", {"p": "/rt/ok", "q": {}})
    check("get after auth", r == {"s": "ok", "d": {"x": 1}}, r)
    # keep-alive and the control ping
    await c.ws.send("0")
    await c.send({"t": "c", "d": {"t": "p", "d": {}}})
    r = await c.request("g", {"p": "/rt/ok/x"})
    check("keep-alive and ping leave the connection working", r == {"s": "ok", "d": 1}, r)
    check("a ping is answered with a pong", {"t": "o", "d": {}} in c.controls, c.controls)
    # unauth revokes listens with "c"
    await c.listen("/rt/ok")
    await c.listen("/rt", {"i": ".key", "l": 1, "vf": "l"}, tag=3)
    r = await c.request("unauth", {})
    check("unauth", r["s"] == "ok", r)
    check("unauth revokes the listen", await c.wait_for(lambda: any(a == "c" and segments(b["p"]) == ["rt", "ok"] and "q" not in b
                                                                    for a, b in c.pushes)), c.pushes)
    check("unauth revokes the query, named by its query object",
          any(a == "c" and segments(b["p"]) == ["rt"] and b.get("q") == [{"i": ".key", "l": 1, "vf": "l"}] for a, b in c.pushes), c.pushes)
    r = await c.request("p", {"p": "/rt/ok", "d": 2})
    check("put refused after unauth", r["s"] == "permission_denied", r)
    await c.close()
    # no data request on a connection that never authenticates: nothing was written
    d = await Client(api_a).open()
    await d.auth()
    r = await d.request("g", {"p": "/rt/denied"})
    check("the refused put wrote nothing", r == {"s": "ok", "d": None}, r)
    await d.close()


async def writes_and_listens():
    a = await Client(api_a).open()
    b = await Client(api_b).open()
    for c in (a, b):
        r = await c.auth()
        check("auth with the token (gauth)", r["s"] == "ok", r)
    await a.request("p", {"p": "/rt/doc", "d": None})
    r = await a.listen("/rt/doc")
    check("listen answers ok", r["s"] == "ok", r)
    await a.request("p", {"p": "/rt/doc", "d": {"a": 1, "b": {"c": 2}}})
    check("a local write reaches the listen",
          await a.wait_for(lambda: a.caches[("/rt/doc", None)] == {"a": 1, "b": {"c": 2}}), a.caches)
    seen = len(a.pushes)
    r = await b.request("m", {"p": "/rt/doc", "d": {"b/c": 3, "e": "x"}})
    check("merge on the other node", r["s"] == "ok", r)
    check("a write on the other node reaches the listen at once",
          await a.wait_for(lambda: a.caches[("/rt/doc", None)] == {"a": 1, "b": {"c": 3}, "e": "x"}), a.caches)
    check("an update's paths arrive as one merge", [act for act, _ in a.pushes[seen:]] == ["m"], a.pushes[seen:])
    r = await a.request("n", {"p": "/rt/doc"})
    check("unlisten", r["s"] == "ok", r)
    seen = len(a.pushes)
    await a.request("p", {"p": "/rt/doc/a", "d": 5})
    await asyncio.sleep(0)  # (the put's answer came after any push for it)
    check("no pushes after unlisten", len(a.pushes) == seen, a.pushes[seen:])
    r = await a.request("p", {"p": "/rt/bad", "d": {"a.b": 1}})
    check("an invalid key is refused with an error status", r["s"] not in ("ok", None) and isinstance(r.get("d"), str), r)
    r = await a.request("p", {"p": "/rt/x", "d": {".sv": "timestamp"}})
    got = (await a.request("g", {"p": "/rt/x"}))["d"]
    check("server timestamps are resolved", r["s"] == "ok" and isinstance(got, (int, float)) and abs(got / 1000 - time.time()) < 60, got)
    await a.close()
    await b.close()


async def transaction_race():
    clients = [await Client(api_a).open() for _ in range(3)]
    for c in clients:
        await c.auth()
    await clients[0].request("p", {"p": "/rt/counter", "d": 0})
    for c in clients:
        await c.listen("/rt/counter")
    rounds = 15
    stale = 0

    async def increment(c):
        nonlocal stale
        for _ in range(rounds):
            while True:
                current = c.caches[("/rt/counter", None)]
                r = await c.request("p", {"p": "/rt/counter", "d": (current or 0) + 1, "h": sdk_hash(current)})
                if r["s"] == "ok":
                    break
                assert r["s"] == "datastale", r
                stale += 1
                # As the SDK does: retry on the value the server sends; read it if none came yet.
                latest = (await c.request("g", {"p": "/rt/counter"}))["d"]
                await c.wait_for(lambda: c.caches[("/rt/counter", None)] == latest, 5)

    await asyncio.gather(*(increment(c) for c in clients))
    final = (await clients[0].request("g", {"p": "/rt/counter"}))["d"]
    check("racing transactions count exactly", final == 3 * rounds, final)
    check("the race produced datastale answers", stale > 0, stale)
    r = await clients[0].request("p", {"p": "/rt/counter", "d": 0, "h": sdk_hash(3 * rounds - 1)})
    check("a stale hash is refused and writes nothing", r["s"] == "datastale" and (await clients[0].request("g", {"p": "/rt/counter"}))["d"] == final, r)
    r = await clients[0].request("p", {"p": "/rt/none", "d": 1, "h": ""})
    check("the empty hash matches nothing there", r["s"] == "ok", r)
    b = await Client(api_b).open()
    await b.auth()
    await b.listen("/rt/counter")
    check("the other node sees the final count", await b.wait_for(lambda: b.caches[("/rt/counter", None)] == final), b.caches)
    for c in clients + [b]:
        await c.close()


async def on_disconnect():
    watcher = await Client(api_b).open()
    await watcher.auth()
    gone = await Client(api_a).open()
    await gone.auth()
    await gone.request("p", {"p": "/rt/presence", "d": None})
    await watcher.listen("/rt/presence")
    r = await gone.request("o", {"p": "/rt/presence/me", "d": {"state": "offline", "at": {".sv": "timestamp"}}})
    check("onDisconnect set", r["s"] == "ok", r)
    r = await gone.request("om", {"p": "/rt/presence", "d": {"lastSeen/me": "bye", "cancelled": 1}})
    check("onDisconnect update", r["s"] == "ok", r)
    r = await gone.request("o", {"p": "/rt/presence/bad", "d": {"a.b": 1}})
    check("an invalid onDisconnect write is refused at once", r["s"] == "invalid_args", r)
    r = await gone.request("o", {"p": "/rt/presence/other", "d": "never"})
    r = await gone.request("oc", {"p": "/rt/presence/other"})
    check("onDisconnect cancel", r["s"] == "ok", r)
    r = await gone.request("oc", {"p": "/rt/presence/cancelled"})
    await gone.request("p", {"p": "/rt/presence/me", "d": {"state": "online"}})
    check("the other node sees the client online",
          await watcher.wait_for(lambda: (watcher.caches[("/rt/presence", None)] or {}).get("me") == {"state": "online"}), watcher.caches)
    # Drop the socket with no close frame, as a crashed client would.
    gone.ws.transport.abort()
    ok = await watcher.wait_for(lambda: ((watcher.caches[("/rt/presence", None)] or {}).get("me") or {}).get("state") == "offline", 20)
    shown = watcher.caches[("/rt/presence", None)] or {}
    check("the onDisconnect write is made when the socket drops, and seen on the other node", ok, shown)
    check("the onDisconnect server timestamp is resolved", isinstance((shown.get("me") or {}).get("at"), (int, float)), shown)
    check("the onDisconnect update is made", await watcher.wait_for(lambda: ((watcher.caches[("/rt/presence", None)] or {}).get("lastSeen") or {}).get("me") == "bye"),
          watcher.caches)
    shown = watcher.caches[("/rt/presence", None)] or {}
    check("cancelled onDisconnect writes are not made", "other" not in shown and "cancelled" not in shown, shown)
    await watcher.close()


async def query_window():
    a = await Client(api_a).open()
    b = await Client(api_b).open()
    await a.auth()
    await b.auth()
    await b.request("p", {"p": "/rt/msgs", "d": None})
    query = {"i": "ts", "l": 3, "vf": "r"}
    r = await a.listen("/rt/msgs", query, tag=7)
    check("query listen answers ok", r["s"] == "ok", r)
    for n in range(1, 7):
        await b.request("p", {"p": f"/rt/msgs/m{n}", "d": {"ts": n * 10, "text": f"message {n}"}})
    want = {f"m{n}": {"ts": n * 10, "text": f"message {n}"} for n in (4, 5, 6)}
    check("the window follows writes made on the other node",
          await a.wait_for(lambda: a.caches[("/rt/msgs", 7)] == want), a.caches)
    check("window pushes carry the tag", all(body.get("t") == 7 for act, body in a.pushes if act == "d" and segments(body["p"])[:2] == ["rt", "msgs"]),
          a.pushes)
    seen = len(a.pushes)
    await b.request("p", {"p": "/rt/msgs/old", "d": {"ts": 1, "text": "older than the window"}})
    await b.request("p", {"p": "/rt/msgs/m7", "d": {"ts": 70, "text": "message 7"}})
    want = {f"m{n}": {"ts": n * 10, "text": f"message {n}"} for n in (5, 6, 7)}
    check("the window moves on", await a.wait_for(lambda: a.caches[("/rt/msgs", 7)] == want), a.caches)
    check("a write outside the window sends nothing", len(a.pushes) - seen == 1, a.pushes[seen:])
    r = await a.request("g", {"p": "/rt/msgs", "q": {"i": "ts", "sp": 20, "ep": 40}})
    check("get with a range", r["s"] == "ok" and sorted(r["d"]) == ["m2", "m3", "m4"], r)
    r = await a.request("g", {"p": "/rt/msgs", "q": {"i": "ts", "sp": 20, "sn": "[MAX_NAME]", "sin": False, "l": 2, "vf": "l"}})
    check("get with startAfter", r["s"] == "ok" and sorted(r["d"]) == ["m3", "m4"], r)
    r = await a.request("g", {"p": "/rt/msgs", "q": {"i": ".key", "ep": "m3", "ein": False}})
    check("get with endBefore on keys", r["s"] == "ok" and sorted(r["d"]) == ["m1", "m2"], r)
    r = await a.request("g", {"p": "/rt/msgs", "q": {"i": "ts", "l": -1}})
    check("a malformed query is refused", r["s"] != "ok", r)
    r = await a.request("n", {"p": "/rt/msgs", "q": query, "t": 7})
    check("unlisten a tagged query", r["s"] == "ok", r)
    await a.close()
    await b.close()


async def large_frames():
    a = await Client(api_a).open()
    b = await Client(api_b).open()
    await a.auth()
    await b.auth()
    big = "Nguyễn Văn An, 박준영 😀 " * 15000   # ~400 KB of UTF-8, 300 K characters
    r = await a.request("p", {"p": "/rt/big", "d": big})
    check("a message of many frames is taken", r["s"] == "ok", r)
    await b.listen("/rt/big")
    check("a large value reaches the other node's listen", await b.wait_for(lambda: b.caches[("/rt/big", None)] == big, 30))
    before = b.count_frames_seen
    got = await b.request("g", {"p": "/rt/big"})
    check("a value larger than a frame comes back whole, on the other node", got.get("d") == big if got["s"] == "ok" else False,
          (got["s"], len(got.get("d") or "")))
    check("the node splits messages larger than 16 KB", b.count_frames_seen > before, b.count_frames_seen)
    huge = "x" * ((16 << 20) - 100)
    r = await a.request("p", {"p": "/rt/huge", "d": huge})
    check("a 16 MiB write is taken by the codec and answered (refused by the record layer, or written)",
          r["s"] == "ok" or (r["s"] == "invalid_args" and isinstance(r.get("d"), str)), r["s"])
    deep = 1
    for _ in range(40):
        deep = {"a": deep}
    r = await a.request("p", {"p": "/rt/deep", "d": deep})
    check("a value deeper than the tree allows is refused by its answer", r["s"] == "invalid_args", r)
    r = await a.request("g", {"p": "/rt/deep"})
    check("the connection works after refused writes", r == {"s": "ok", "d": None}, r)
    # One websocket message larger than the node takes (17 MiB): closed with 1009.
    try:
        await a.ws.send("{" + " " * (18 << 20) + "}")
        await asyncio.wait_for(a.reader, 30)
    except websockets.ConnectionClosed:
        pass
    code = a.ws.close_code
    check("a message over the bound is closed with 1009", code == 1009, code)
    await b.close()


def rest_get(api, path):
    """A REST read of the tree on `api`, as a Firebase REST client makes it."""
    import urllib.request
    request = urllib.request.Request(f"http://{api}{path}", headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


async def typing_across_nodes():
    """A websocket client of node A sets its user's typing flag; a REST reader of node B sees it
    in a plain read and a query of the conversation, and a listen there follows it."""
    a = await Client(api_a).open()
    b = await Client(api_b).open()
    for c in (a, b):
        await c.auth()
    uid = rest_get(api_a, "/.lanchat/status")["userId"]
    flag = f"/conversations/rt-typing/typingIndicator/{uid}"
    await a.request("p", {"p": "/conversations/rt-typing/messages/m1", "d": {"text": "hi", "senderId": uid, "date": 1}})
    query = {"i": ".key", "l": 1, "vf": "r"}
    await b.listen("/conversations/rt-typing", query, tag=7)
    r = await a.request("p", {"p": flag, "d": True})
    check("a websocket client sets its typing flag", r["s"] == "ok", r)

    async def shown_on_b(want):
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            whole = rest_get(api_b, "/conversations/rt-typing.json") or {}
            window = rest_get(api_b, '/conversations/rt-typing.json?orderBy="$key"&limitToLast=1') or {}
            if whole.get("typingIndicator") == want and window.get("typingIndicator") == want:
                return True
            await asyncio.sleep(0.02)
        return False

    check("a REST reader of the other node sees the flag, in a plain and a query read", await shown_on_b({uid: True}))
    check("a query listen on the other node sees it in its window",
          await b.wait_for(lambda: b.caches[("/conversations/rt-typing", 7)] == {"typingIndicator": {uid: True}}), b.caches)
    r = await a.request("p", {"p": flag, "d": None})
    check("the flag cleared over the websocket is gone on the other node", r["s"] == "ok" and await shown_on_b(None))
    await a.close()
    await b.close()


async def main():
    for step in (handshake_and_auth, writes_and_listens, transaction_race, on_disconnect, query_window, large_frames,
                 typing_across_nodes):
        try:
            await step()
        except Exception as error:  # noqa: BLE001
            check(step.__name__, False, repr(error))
    return tally.finish()


sys.exit(asyncio.run(main()))
