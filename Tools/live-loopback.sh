#!/usr/bin/env bash
# Live state between real processes on loopback (Protocol.md §5.7): two nodes discover each
# other by beacons on a discovery port of this run's own; a typing flag set through A's local API
# shows on B, adds no record on either node, and disappears from B within three beacon intervals
# (6 s, with 0.1 s for the timer's wake-up and the polling) of A being killed with SIGKILL, which
# clears nothing; B then shows A offline with a last
# seen. A cannot set B's flag through its API.
# Then three nodes in a line, discovery off, each knowing only the next by --peer (A - C - B):
# A's typing flag reaches B relayed by C within about 100 ms, and goes from B within three beacon
# intervals (6 s) of the last renewal after A is killed with SIGKILL.
# Usage: Tools/live-loopback.sh [path/to/lanchat]
set -uo pipefail
cd "$(dirname "$0")/.."
LANCHAT=${1:-.build/debug/lanchat}
. Tools/harness.sh

port_base=$(Tools/free-ports 12) || exit 1
disc=$((port_base + 10))
has_api() { grep -q '"api"' "$1" 2>/dev/null; }
for n in a b; do "$LANCHAT" init --data "$work/$n" --name "node $n" >/dev/null || exit 1; done
start() {  # start NAME PORT
    "$LANCHAT" run --data "$work/$1" --listen 127.0.0.1:$2 --discovery-port $disc --discovery-interface lo \
        --api 127.0.0.1:0 --api-token "token-$1" 2>>"$work/$1.log" &
    pids+=($!)
    until_true 15 has_api "$work/$1/node.json" || { echo "node $1 did not start" >&2; cat "$work/$1.log" >&2; exit 1; }
}
start a $((port_base + 1)); pid_a=${pids[-1]}
start b $((port_base + 2))
api() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["api"])' "$work/$1/node.json"; }
uid() { "$LANCHAT" whoami --data "$work/$1" 2>/dev/null | grep -o '[A-Za-z0-9_-]\{43\}' | head -1; }
call() {  # call NODE METHOD PATH [BODY]
    curl -s -X "$2" -H "Authorization: Bearer token-$1" ${4:+--data "$4"} "http://$(api "$1")$3"
}
status_of() { curl -s -o /dev/null -w '%{http_code}' -X "$2" -H "Authorization: Bearer token-$1" ${4:+--data "$4"} "http://$(api "$1")$3"; }
# kill_and_time PID NODE PATH: kills PID with SIGKILL, then polls NODE's PATH every 10 ms (one
# HTTP connection per poll, no process started) until it reads null; prints the seconds taken,
# or "never" after 10 s.
kill_and_time() {
    python3 - "$1" "$(api "$2")" "$2" "$3" <<'PY'
import http.client, os, signal, sys, time
pid, addr, node, path = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
host, port = addr.rsplit(":", 1)
def read():
    c = http.client.HTTPConnection(host, int(port), timeout=5)
    c.request("GET", path, headers={"Authorization": "Bearer token-" + node})
    data = c.getresponse().read(); c.close()
    return data
os.kill(pid, signal.SIGKILL)
killed = time.time()
while time.time() - killed < 10:
    if read() == b"null":
        print("%.2f" % (time.time() - killed)); sys.exit(0)
    time.sleep(0.01)
print("never")
PY
}
records() { call "$1" GET /.lanchat/status | python3 -c 'import json,sys; print(json.load(sys.stdin)["records"])'; }
ua=$(uid a) ub=$(uid b)
check "user ids" "43 43" "${#ua} ${#ub}"
hears() { call b GET "/presence/$ua/state.json" | grep -q online; }
until_true 15 hears; check "B hears A" 0 $?

before="$(records a) $(records b)"
flag="/conversations/general/typingIndicator/$ua.json"
check "A sets its flag" 200 "$(status_of a PUT "$flag" true)"
shows() { [ "$(call b GET "$flag")" == "$1" ]; }
until_true 5 shows true; check "B shows A typing" 0 $?
check "A cannot set B's flag" 403 "$(status_of a PUT "/conversations/general/typingIndicator/$ub.json" true)"
check "no record on either node" "$before" "$(records a) $(records b)"

took=$(kill_and_time "$pid_a" b "$flag")
check "B drops A's flag after A is killed" 1 "$([ "$took" != never ] && echo 1 || echo 0)"
echo "B dropped A's flag ${took} s after A was killed"
# The flag goes three intervals after A's last beacon, which came at most an instant before the
# kill: within 6 s of it; 0.1 s more for the timer's wake-up and this script's 10 ms polling.
check "within three beacon intervals (6 s): took ${took} s" 1 "$(python3 -c "print(int('$took' != 'never' and $took <= 6.1))" 2>/dev/null || echo 0)"
offline() { call b GET "/presence/$ua/state.json" | grep -q offline; }
until_true 5 offline; check "B shows A offline" 0 $?
check "with a last seen" 1 "$(call b GET "/presence/$ua/lastSeen.json" | grep -c '^[0-9]\{13\}$')"

# --- A line of three: A - C - B, each with discovery off, knowing only its neighbour.
for n in la lb lc; do "$LANCHAT" init --data "$work/$n" --name "node $n" >/dev/null || exit 1; done
start_line() {  # start_line NAME PORT [PEER_PORT]
    "$LANCHAT" run --data "$work/$1" --listen 127.0.0.1:$2 --no-discovery ${3:+--peer 127.0.0.1:$3} \
        --api 127.0.0.1:0 --api-token "token-$1" 2>>"$work/$1.log" &
    pids+=($!)
    until_true 15 has_api "$work/$1/node.json" || { echo "node $1 did not start" >&2; cat "$work/$1.log" >&2; exit 1; }
}
start_line la $((port_base + 3)); pid_la=${pids[-1]}
start_line lc $((port_base + 4)) $((port_base + 3))
start_line lb $((port_base + 5)) $((port_base + 4))
ula=$(uid la) ulb=$(uid lb)
hears_line() { ! call lb GET "/presence/$ula/state.json" | grep -q online && call lc GET "/presence/$ula/state.json" | grep -q online \
    && call lc GET "/presence/$ulb/state.json" | grep -q online; }
until_true 15 hears_line; check "C hears A and B; B does not hear A directly" 0 $?
# Flips of A's flag, each timed until B shows it (the API's own client, no curl per poll).
line_flag="/conversations/general/typingIndicator/$ula.json"
latency=$(python3 - "$(api la)" "$(api lb)" "$line_flag" <<'PY'
import http.client, sys, time
a, b, path = sys.argv[1:4]
def call(addr, node, method, body=None):
    host, port = addr.rsplit(":", 1)
    c = http.client.HTTPConnection(host, int(port), timeout=5)
    c.request(method, path, body=body, headers={"Authorization": "Bearer token-" + node})
    r = c.getresponse(); data = r.read(); c.close()
    return r.status, data
times = []
for flip in range(20):
    want = b"true" if flip % 2 == 0 else b"null"
    start = time.time()
    call(a, "la", "PUT", want)
    while call(b, "lb", "GET")[1] != want:
        if time.time() - start > 5: break
    times.append(time.time() - start)
    time.sleep(0.05)  # a person's pace between flips, not synchronisation
times.sort()
print("%.3f %.3f" % (times[len(times) // 2], times[-1]))
PY
)
median=${latency% *} worst=${latency#* }
echo "line A - C - B: B sees A's flag after ${median} s (median of 20), ${worst} s at worst"
check "B sees A's flag through C within ~100 ms: median ${median} s, worst ${worst} s" 1 \
    "$(python3 -c "print(int($median <= 0.1 and $worst <= 0.5))")"
call la PUT "$line_flag" true >/dev/null
line_shows() { [ "$(call lb GET "$line_flag")" == "$1" ]; }
until_true 5 line_shows true; check "B shows A typing, relayed" 0 $?
# Renewed every beacon interval, the relayed flag stays while A lives.
held_since=$(date +%s); stays=0
while [ $(( $(date +%s) - held_since )) -lt 8 ]; do line_shows true || stays=1; sleep 0.5; done
check "B keeps A's relayed flag for 8 s while A runs" 0 $stays
took=$(kill_and_time "$pid_la" lb "$line_flag")
check "B drops A's relayed flag after A is killed" 1 "$([ "$took" != never ] && echo 1 || echo 0)"
echo "line A - C - B: A's relayed flag gone from B ${took} s after A was killed"
# Relayed, it goes three beacon intervals (6 s) after its last renewal, which came at most an
# instant before the kill; 0.1 s more for the timer's wake-up and the polling.
check "within three beacon intervals (6 s): took ${took} s" 1 "$(python3 -c "print(int('$took' != 'never' and $took <= 6.1))" 2>/dev/null || echo 0)"

if [ "$failed" -gt 0 ]; then for n in a b la lc lb; do echo "--- node $n log" >&2; tail -20 "$work/$n.log" >&2; done; fi
echo "live loopback: $passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
