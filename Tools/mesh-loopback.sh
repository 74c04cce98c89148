#!/usr/bin/env bash
# Real processes on loopback: three nodes joined in a line with --peer (no discovery); a message
# sent on any node is read on all; a node restarted after a kill catches up; canonically
# equivalent spellings of a key written on different nodes are one key everywhere.
# Usage: Tools/mesh-loopback.sh [path/to/lanchat]
set -uo pipefail
cd "$(dirname "$0")/.."
LANCHAT=${1:-.build/debug/lanchat}
. Tools/harness.sh


port_base=$(Tools/free-ports 4) || exit 1
start() {  # start N [extra args]
    local n=$1; shift
    "$LANCHAT" run --data "$work/n$n" --listen 127.0.0.1:$((port_base + n)) --no-discovery "$@" 2>>"$work/n$n.log" &
    pids[$n]=$!
    until_true 10 test -f "$work/n$n/node.json"
}
names=("" "Alice Smith" "박준영" "Nguyễn Văn An")
for n in 1 2 3; do "$LANCHAT" init --data "$work/n$n" --name "${names[$n]}" >/dev/null; done
start 1
start 2 --peer 127.0.0.1:$((port_base + 1))
start 3 --peer 127.0.0.1:$((port_base + 2))

count_on() { [ "$("$LANCHAT" messages --data "$work/n$1" general | grep -c "$2")" -ge 1 ]; }
all_have() { for n in 1 2 3; do count_on "$n" "$1" || return 1; done; }

for n in 1 2 3; do
    "$LANCHAT" send --data "$work/n$n" general "hello from node $n" >/dev/null
    until_true 30 all_have "hello from node $n"; check "message from node $n on all" 0 $?
done

# Kill node 3, write while it is down, restart it: it catches up.
kill -9 "${pids[3]}"; wait "${pids[3]}" 2>/dev/null
for i in $(seq 1 20); do "$LANCHAT" send --data "$work/n1" general "while 3 was down $i" >/dev/null; done
start 3 --peer 127.0.0.1:$((port_base + 2))
until_true 30 all_have "while 3 was down 20"; check "caught up after restart" 0 $?
same_tree() { [ "$("$LANCHAT" get --data "$work/n1" /)" == "$("$LANCHAT" get --data "$work/n3" /)" ] && [ "$("$LANCHAT" get --data "$work/n2" /)" == "$("$LANCHAT" get --data "$work/n3" /)" ]; }
until_true 30 same_tree; check "identical trees" 0 $?
check "peers of the middle node" 2 "$("$LANCHAT" peers --data "$work/n2" | grep -c connected)"
check "log lines" 1 "$(grep -c 'connected to' "$work/n1.log" | awk '{print ($1 >= 1)}')"

# One key per spelling (Protocol.md §5.1): "café" written in NFC on one node and in NFD on
# another is one key, shown in NFC, holding the later write; a delete in either spelling removes
# it. Both orders: NFC first on node 1, then NFD first on node 3.
nfc=$(printf 'caf\xc3\xa9') nfd=$(printf 'cafe\xcc\x81')
all_show() { for n in 1 2 3; do [ "$("$LANCHAT" get --data "$work/n$n" "$1")" == "$2" ] || return 1; done; }
for pass in "1 $nfc 3 $nfd k1" "3 $nfd 1 $nfc k2"; do
    set -- $pass
    "$LANCHAT" set --data "$work/n$1" "/$5/$2" '"first"' >/dev/null
    until_true 30 all_show "/$5" "{\"$nfc\":\"first\"}"; check "$5: first spelling on all" 0 $?
    "$LANCHAT" set --data "$work/n$3" "/$5/$4" '"second"' >/dev/null
    until_true 30 all_show "/$5" "{\"$nfc\":\"second\"}"; check "$5: one key in NFC holding the later write" 0 $?
    "$LANCHAT" delete --data "$work/n2" "/$5/$4" >/dev/null
    until_true 30 all_show "/$5" "null"; check "$5: a delete in one spelling removes the key" 0 $?
done

if [ "$failed" -gt 0 ]; then for n in 1 2 3; do echo "--- node $n log" >&2; tail -20 "$work/n$n.log" >&2; done; fi
echo "mesh loopback: $passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
