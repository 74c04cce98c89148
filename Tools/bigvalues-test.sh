#!/usr/bin/env bash
# Firebase's size limits between two real nodes on loopback (Tools/interop/big_values.py): a
# 10 MB string by REST and a 16 MB update of 100,000 children by firebase-admin on node A, read
# back exactly on node B after sync, never shown there in part, with node A's memory measured;
# with node B's peak memory and CPU time for each fold; then the same sizes over the websocket (`p` and `m`, Tools/interop/big_values_ws.py), seen on
# node B by a websocket listen in one change and read back by REST and by `g`.
# Usage: Tools/bigvalues-test.sh [path/to/lanchat]
set -uo pipefail
cd "$(dirname "$0")/.."
LANCHAT=${1:-.build/debug/lanchat}
python=$(Tools/python-env) || exit 1
"$python" -c "import firebase_admin" 2>/dev/null || "$python" -m pip install -q --disable-pip-version-check "firebase-admin>=7,<8" >&2
. Tools/harness.sh
for n in a b; do "$LANCHAT" init --data "$work/$n" --name "Big ${n^^}" >/dev/null; done
"$LANCHAT" run --data "$work/a" --listen 127.0.0.1:0 --no-discovery --api-token owner 2>"$work/a.log" & pids+=($!)
pid_a=$!
until_true 10 test -f "$work/a/node.json" || { echo "big values: node A did not start" >&2; exit 1; }
listen_a=$(grep -o '"listen":"[^"]*"' "$work/a/node.json" | cut -d'"' -f4)
"$LANCHAT" run --data "$work/b" --listen 127.0.0.1:0 --no-discovery --api-token owner --peer "$listen_a" 2>"$work/b.log" & pids+=($!)
pid_b=$!
api() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['api'])" "$work/$1/node.json" 2>/dev/null; }
ready() { [ -n "$(api a)" ] && [ -n "$(api b)" ] && "$LANCHAT" peers --data "$work/b" 2>/dev/null | grep -q connected; }
until_true 20 ready || { echo "big values: nodes did not connect" >&2; tail -n 5 "$work/a.log" "$work/b.log" >&2; exit 1; }
"$python" Tools/interop/big_values.py "$(api a)" "$(api b)" "$pid_a" "$pid_b"
status=$?
# The same sizes through the websocket protocol the SDKs speak, on the same two nodes.
"$python" Tools/interop/big_values_ws.py "$(api a)" "$(api b)" "$pid_a" || status=1
[ $status -eq 0 ] || tail -n 20 "$work/a.log" "$work/b.log" >&2
exit $status
