"""firebase-admin (Python, emulator mode) against two running lanchat nodes.

Usage: python firebase_interop.py API_A API_B      (each HOST:PORT; both nodes run with --api-token owner)

Checks set, get, push, update, delete, every query form, a transaction raced by concurrent
writers, and listen(): the initial put, then events for local writes and for writes made on the
other node. Prints "firebase interop: N passed, M failed".
"""
import os
import sys
import threading
import time

import firebase_admin
from firebase_admin import db

from tally import Tally

api_a, api_b = sys.argv[1], sys.argv[2]
tally = Tally("firebase interop")
check = tally.check


def app(name, api):
    # Emulator mode by URL: no credentials, every request carries "Bearer owner" and ns=.
    return firebase_admin.initialize_app(options={"databaseURL": f"http://{api}/?ns=lanchat"}, name=name)


a = app("a", api_a)
b = app("b", api_b)
ra = lambda path="/": db.reference(path, app=a)
rb = lambda path="/": db.reference(path, app=b)

# set / get / update / delete
ra("interop").delete()
ra("interop/a").set({"b": 1, "c": {"d": 2}})
check("get after set", ra("interop/a").get() == {"b": 1, "c": {"d": 2}}, ra("interop/a").get())
ra("interop/a").update({"c/d": 3, "e": None})
check("update", ra("interop/a").get() == {"b": 1, "c": {"d": 3}}, ra("interop/a").get())
ra("interop/a/b").delete()
check("delete", ra("interop/a").get() == {"c": {"d": 3}}, ra("interop/a").get())
check("absent is None", ra("interop/none").get() is None)
ra("interop/unicode").set("Nguyễn Văn An, 박준영")
check("unicode round trip", ra("interop/unicode").get() == "Nguyễn Văn An, 박준영")
ra("interop/list").set(["x", "y", "z"])
check("arrays come back as lists", ra("interop/list").get() == ["x", "y", "z"], ra("interop/list").get())

# push: monotonic keys
keys = [ra("interop/pushed").push({"n": i}).key for i in range(5)]
check("push keys are 20 chars and increasing", all(len(k) == 20 for k in keys) and keys == sorted(keys), keys)
check("pushed values", [v["n"] for k, v in sorted(ra("interop/pushed").get().items())] == list(range(5)))

# etag and conditional writes
value, etag = ra("interop/a").get(etag=True)
check("get with etag", value == {"c": {"d": 3}} and isinstance(etag, str) and etag)
changed, _, _ = ra("interop/a").get_if_changed(etag)
check("get_if_changed unchanged", changed is False)
ok = True
try:
    ra("interop/a").set_if_unchanged(etag, {"z": 1})
except Exception as e:  # noqa: BLE001
    ok = False
check("set_if_unchanged", ok and ra("interop/a").get() == {"z": 1})
success, current, _ = ra("interop/a").set_if_unchanged(etag, {"zz": 1})
check("stale etag refused", success is False and current == {"z": 1}, (success, current))

# queries
scores = {"alice": {"score": 30, "name": "Alice"}, "bob": {"score": 10, "name": "Bob"},
          "carol": {"score": 20, "name": "Carol"}, "dave": {"name": "Dave"}, "erin": {"score": 20, "name": "Erin"}}
ra("interop/scores").set(scores)
q = ra("interop/scores")
got = q.order_by_child("score").get()
check("order_by_child order", list(got.keys()) == ["dave", "bob", "carol", "erin", "alice"], list(got.keys()))
got = q.order_by_child("score").start_at(20).get()
check("start_at", sorted(got) == ["alice", "carol", "erin"], got)
got = q.order_by_child("score").end_at(20).get()
check("end_at", sorted(got) == ["bob", "carol", "dave", "erin"], got)
got = q.order_by_child("score").equal_to(20).get()
check("equal_to", sorted(got) == ["carol", "erin"], got)
got = q.order_by_child("score").limit_to_first(2).get()
check("limit_to_first", list(got.keys()) == ["dave", "bob"], got)
got = q.order_by_child("score").limit_to_last(2).get()
check("limit_to_last", list(got.keys()) == ["erin", "alice"], got)
got = q.order_by_key().start_at("c").end_at("d~").get()
check("order_by_key range", list(got.keys()) == ["carol", "dave"], got)
got = q.order_by_key().limit_to_last(1).get()
check("order_by_key limit", list(got.keys()) == ["erin"], got)
ra("interop/values").set({"x": 3, "y": 1, "z": 2})
got = ra("interop/values").order_by_value().limit_to_first(2).get()
check("order_by_value", list(got.keys()) == ["y", "z"], got)

# a transaction raced by concurrent writers on both nodes
ra("interop/counter").set(0)
def bump(ref, times):
    for _ in range(times):
        ref.transaction(lambda current: (current or 0) + 1)
threads = [threading.Thread(target=bump, args=(ra("interop/counter"), 10)) for _ in range(3)]
for t in threads: t.start()
for t in threads: t.join()
check("transaction under concurrent writers", ra("interop/counter").get() == 30, ra("interop/counter").get())

# listen(): initial put, a local write, a write on the other node
events = []
arrived = threading.Condition()
def on_event(event):
    with arrived:
        events.append((event.event_type, event.path, event.data))
        arrived.notify_all()
def wait_for(predicate, timeout=20):
    deadline = time.time() + timeout
    with arrived:
        while not predicate():
            left = deadline - time.time()
            if left <= 0:
                return False
            arrived.wait(left)
    return True

ra("interop/chat").set({"first": "hello"})
registration = ra("interop/chat").listen(on_event)
check("listen initial put", wait_for(lambda: any(e[0] == "put" and e[1] == "/" and e[2] == {"first": "hello"} for e in events)), events)
ra("interop/chat/local").set("from A")
check("listen sees a local write", wait_for(lambda: ("put", "/local", "from A") in events), events)
rb("interop/chat/remote").set("from B")
check("listen sees a write on the other node", wait_for(lambda: ("put", "/remote", "from B") in events), events)
key = rb("interop/chat").push({"text": "pushed on B"}).key
check("listen sees a push as one put", wait_for(lambda: ("put", "/" + key, {"text": "pushed on B"}) in events), events)
# Closing the listener ends its reader thread with an exception inside firebase-admin; that
# is the client's way of stopping, not a failure.
threading.excepthook = lambda args: None
registration.close()

os._exit(tally.finish())
