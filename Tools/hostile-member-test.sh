#!/usr/bin/env bash
# Real processes on loopback: a hostile member (Tools/interop/hostile_member.py, written from
# Protocol.md with cbor2 and PyNaCl) signs records that try to take over, edit or delete Alice's
# message, profile, photo and profile picture with any clock it likes; they reach every node
# through the attacker's own node, are stored everywhere, and change nothing anyone sees of Alice's.
# Usage: Tools/hostile-member-test.sh [path/to/lanchat]
set -uo pipefail
cd "$(dirname "$0")/.."
LANCHAT=${1:-.build/debug/lanchat}
PY=$(Tools/python-env) || { echo "hostile member: cannot set up Python" >&2; exit 1; }
. Tools/harness.sh

"$PY" - "$work" <<'PYEOF' || exit 1
import sys
from PIL import Image
Image.frombytes("RGB", (32, 24), bytes((x * 5 + y * 3 + c) % 256 for y in range(24) for x in range(32) for c in range(3))).save(f"{sys.argv[1]}/photo.png")
Image.frombytes("RGB", (16, 16), bytes((x * y + c * 40) % 256 for y in range(16) for x in range(16) for c in range(3))).save(f"{sys.argv[1]}/avatar.png")
PYEOF

addr=()
start() {  # start NAME [extra args]
    local n=$1; shift
    rm -f "$work/$n/node.json"
    "$LANCHAT" run --data "$work/$n" --listen 127.0.0.1:0 --no-discovery "$@" 2>>"$work/$n.log" &
    pids+=($!)
    until_true 10 test -f "$work/$n/node.json" || { echo "hostile member: node $n did not start" >&2; exit 1; }
    addr_of[$n]=$(grep -o '"listen":"[^"]*"' "$work/$n/node.json" | cut -d'"' -f4)
}
declare -A addr_of
alice=$("$LANCHAT" init --data "$work/alice" --name "Alice Smith")
"$LANCHAT" init --data "$work/bob" --name "Bob Jones" >/dev/null
"$LANCHAT" init --data "$work/mallory" --name "Mallory" >/dev/null
start alice
start bob --peer "${addr_of[alice]}"
start mallory --peer "${addr_of[bob]}"   # the attacker reaches Alice only through Bob

key=$("$LANCHAT" send --data "$work/alice" general "hello from alice")
photo=$("$LANCHAT" send-image --data "$work/alice" general "$work/photo.png" 2>/dev/null)
"$LANCHAT" set-picture --data "$work/alice" "$work/avatar.png" 2>/dev/null
records() { "$LANCHAT" status --data "$work/$1" | awk '/^records:/ {print $2}'; }
synced() { [ "$(records "$1")" == "$(records alice)" ]; }
until_true 30 synced bob; check "bob has alice's records" 0 $?
until_true 30 synced mallory; check "mallory has alice's records" 0 $?
has_photo() { [ "$("$LANCHAT" files --data "$work/bob" images/ | grep -c complete)" -ge 2 ]; }
until_true 30 has_photo; check "bob holds the photo and the picture" 0 $?

snapshot() {  # what a user of node $1 sees of Alice
    "$LANCHAT" messages --data "$work/$1" general
    "$LANCHAT" get --data "$work/$1" "/conversations/general/messages"
    "$LANCHAT" get --data "$work/$1" "/users/$alice"
    "$LANCHAT" files --data "$work/$1" images/ | awk '{print $1, $2, $3}'
    "$LANCHAT" get-file --data "$work/$1" "images/${alice}_${photo}.png" "$work/$1.photo" 2>/dev/null && sha256sum < "$work/$1.photo"
    "$LANCHAT" get-picture --data "$work/$1" -- "$alice" "$work/$1.avatar" 2>/dev/null && sha256sum < "$work/$1.avatar"
}
before_alice=$(snapshot alice); before_bob=$(snapshot bob)
check "alice's message as sent" 1 "$("$LANCHAT" messages --data "$work/bob" general | grep -c "hello from alice")"
check "alice's photo as sent" "$(sha256sum < "$work/photo.png")" "$(sha256sum < "$work/bob.photo")"

"$LANCHAT" export --data "$work/alice" > "$work/alice.lcx" 2>/dev/null
now_ms=$(( $(date +%s%3N) ))
attacks=$("$PY" Tools/interop/hostile_member.py "$work/alice.lcx" "$work/attacks.lcx" "$now_ms")
check "attack records signed" 1 "$([ "${attacks:-0}" -gt 50 ] && echo 1)"
expected=$(( $(records alice) + attacks ))
"$LANCHAT" import --data "$work/mallory" "$work/attacks.lcx" >/dev/null 2>"$work/import.err"
check "mallory's node imports the attack" 0 $?
has_all() { [ "$(records "$1")" == "$expected" ]; }
until_true 30 has_all bob; check "bob stores every attack record" 0 $?
until_true 30 has_all alice; check "alice stores every attack record (relayed by bob)" 0 $?
for n in alice bob; do
    check "the probe took effect on $n" '"accepted"' "$("$LANCHAT" get --data "$work/$n" /hostile/probe)"
done
check "alice sees her own data unchanged" "$before_alice" "$(snapshot alice)"
check "bob sees alice's data unchanged" "$before_bob" "$(snapshot bob)"
check "no evil text anywhere" 0 "$("$LANCHAT" get --data "$work/bob" / | grep -c evil)"

# Alice still edits and deletes her own message, and everyone sees it.
"$LANCHAT" set --data "$work/alice" "/conversations/general/messages/$key/text" '"hello, edited"' >/dev/null 2>"$work/edit.err"
check "alice edits her message" "0 " "$? $(cat "$work/edit.err")"
edited() { "$LANCHAT" messages --data "$work/bob" general | grep -q "hello, edited"; }
until_true 30 edited; check "alice's edit reaches bob" 0 $?
"$LANCHAT" delete --data "$work/alice" "/conversations/general/messages/$key" >/dev/null 2>"$work/delete.err"
check "alice deletes her message" "0 " "$? $(cat "$work/delete.err")"
gone() { [ "$("$LANCHAT" get --data "$work/bob" "/conversations/general/messages/$key")" == "null" ]; }
until_true 30 gone; check "alice's delete reaches bob" 0 $?

if [ "$failed" -gt 0 ]; then
    for n in alice bob; do echo "--- $n: records $(records $n), message: $("$LANCHAT" get --data "$work/$n" "/conversations/general/messages/$key")" >&2; done
    for n in alice bob mallory; do echo "--- $n log" >&2; tail -20 "$work/$n.log" >&2; done; cat "$work/import.err" >&2; fi
echo "hostile member: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
