#!/usr/bin/env bash
# Runs a Realtime Database websocket client (Python websockets, written from the Firebase Web
# SDK's protocol) against two lanchat nodes joined on loopback.
# Usage: Tools/interop/realtime-interop.sh [path/to/lanchat]
set -uo pipefail
cd "$(dirname "$0")/../.."
LANCHAT=${1:-.build/debug/lanchat}
python=$(Tools/python-env) || exit 1
work=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$work"' EXIT
port=$(Tools/free-ports 2) || exit 1
token=rt-$RANDOM$RANDOM
for n in a b; do "$LANCHAT" init --data "$work/$n" --name "Realtime ${n^^}" >/dev/null; done
"$LANCHAT" run --data "$work/a" --listen "127.0.0.1:$port" --no-discovery --api-token "$token" 2>"$work/a.log" & pids+=($!)
"$LANCHAT" run --data "$work/b" --listen "127.0.0.1:$((port + 1))" --no-discovery --api-token "$token" --peer "127.0.0.1:$port" 2>"$work/b.log" & pids+=($!)
api() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['api'])" "$work/$1/node.json" 2>/dev/null; }
deadline=$(( $(date +%s) + 20 ))
until [ -n "$(api a)" ] && [ -n "$(api b)" ] && "$LANCHAT" peers --data "$work/b" 2>/dev/null | grep -q connected; do
    [ "$(date +%s)" -ge "$deadline" ] && { echo "nodes did not start"; cat "$work/a.log" "$work/b.log"; exit 1; }
    sleep 0.2
done
"$python" Tools/interop/realtime_interop.py "$(api a)" "$(api b)" "$token"
status=$?
[ $status -eq 0 ] || { tail -n 20 "$work/a.log" "$work/b.log" >&2; }
exit $status
