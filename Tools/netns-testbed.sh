#!/usr/bin/env bash
# A virtual LAN of five hosts in network namespaces, one lanchat node on each, proving that the
# nodes find each other by multicast alone and converge through a partition, a crash during
# sync and packet loss, and that a private group across all five reaches a member who was
# offline (even one killed mid-sync) and no one else (a sixth host, joining for that part).
#
# Usage: Tools/netns-testbed.sh [path/to/lanchat]      (default .build/debug/lanchat; needs root)
#
# Topology: a "switch" namespace holding a bridge, and five host namespaces lanchat-tb-h1..h5 (h6
# joins for the last part),
# each with lo and one veth (tb0, 10.231.77.N/24) plugged into the bridge. Traffic stays inside
# these namespaces: every node beacons only on its namespace's tb0, and every CLI command runs
# inside the node's namespace (the node's control port is on that namespace's loopback).
# An nftables rule in each host drops broadcast beacons, so discovery can only be by multicast.
set -uo pipefail
cd "$(dirname "$0")/.."

LABEL="netns testbed"
PREFIX=lanchat-tb
SUBNET=10.231.77
PORT=7000
HOSTS=(1 2 3 4 5)
NAMES=("" "Nguyễn Văn An" "Alice Smith" "박준영" "Omar Haddad" "Ingrid Berg" "Zoë Ndiaye")
DEADLINE=${NETNS_TESTBED_DEADLINE:-60}   # seconds allowed per wait
source Tools/netns-harness.sh "$@"

# ---------------------------------------------------------------------------------------------
# The virtual LAN.
setup_lan() {
    local n
    add_switch || return 1
    for n in "${HOSTS[@]}"; do add_lan_host "$n" || return 1; done
}

add_lan_host() {  # add_lan_host N: host N on the switch
    add_ipv4_host "$1" || return 1
    # Beacons also go to the broadcast address; drop those so only multicast can discover.
    # The counters show both kinds arrived (and so that the broadcast rule had work to do).
    ip netns exec "$(hostns "$1")" nft -f - <<'EOF' || return 1
table inet lanchat_tb {
    chain input {
        type filter hook input priority 0; policy accept;
        udp dport 47777 meta pkttype broadcast counter drop
        udp dport 47777 meta pkttype multicast counter
    }
}
EOF
}

start_node() {  # start_node N
    local n=$1
    echo "=== testbed: start $(date +%T.%N)" >>"$work/h$n.log"
    ip netns exec "$(hostns "$n")" "$LANCHAT" run --data "$work/h$n" --listen "$SUBNET.$n:$PORT" \
        --discovery-interface tb0 >/dev/null 2>>"$work/h$n.log" 9>&- &
    PID[$n]=$!
}

stop_node() {  # stop_node N SIGNAL
    local n=$1
    kill "-$2" "${PID[$n]}" 2>/dev/null
    {   # (quietly: bash would report a job killed by a signal)
        wait_exit "${PID[$n]}" 10 || kill -KILL "${PID[$n]}"
        wait "${PID[$n]}"
    } 2>/dev/null
    unset "PID[$n]"
}

# peer_ids N any|heard: the user ids of the peers node N has a session with or hears beacons
# from (any), or hears beacons from (heard), sorted, one per line.
peer_ids() {
    lc "$1" status --json 2>/dev/null | python3 -c '
import json, sys
status = json.load(sys.stdin)
heard_only = sys.argv[1] == "heard"
ids = [p["userID"] for p in status["peers"] if p["discovered"] or (p["connected"] and not heard_only)]
print("\n".join(sorted(ids)))' "$2"
}
heard_count() { peer_ids "$1" heard | grep -c .; }

all_see_the_others() {
    local n
    for n in "${HOSTS[@]}"; do [ "$(peer_ids "$n" any)" == "$(others_of "$n")" ] || return 1; done
}

# Every message text this run sent, one per line; each text is a unique token "tb-...".
: >"$work/expected"
send() {  # send N TEXT
    lc "$1" send general "$2" >/dev/null || { echo "send from h$1 failed" >&2; return 1; }
    echo "$2" >>"$work/expected"
}

# tokens_of N: the message tokens node N holds, sorted.
tokens_of() { lc "$1" messages general 2>/dev/null | grep -o 'tb-[a-z0-9-]*' | sort; }
has_tokens() {  # has_tokens N FILE: node N holds every token in FILE
    [ -z "$(comm -23 <(sort "$2") <(tokens_of "$1"))" ]
}
lacks_tokens() {  # lacks_tokens N FILE: node N holds none of the tokens in FILE
    [ -z "$(comm -12 <(sort "$2") <(tokens_of "$1"))" ]
}

# converged NODES...: each holds exactly the expected messages, and all show the same message
# list and the same whole tree.
converged() {
    local n first=""
    sort "$work/expected" >"$work/expected.sorted"
    for n in "$@"; do
        lc "$n" messages general >"$work/msgs.h$n" 2>/dev/null || return 1
        grep -o 'tb-[a-z0-9-]*' "$work/msgs.h$n" | sort | cmp -s - "$work/expected.sorted" || return 1
        [ -z "$first" ] && first=$n
        cmp -s "$work/msgs.h$first" "$work/msgs.h$n" || return 1
    done
    for n in "$@"; do
        lc "$n" get / >"$work/tree.h$n" 2>/dev/null || return 1
        cmp -s "$work/tree.h$first" "$work/tree.h$n" || return 1
    done
}
describe_state() {  # what each node holds and whether it still runs, for a failure report
    local n state
    for n in "${HOSTS[@]}"; do
        state="running"
        if [ -z "${PID[$n]:-}" ]; then state="not started"
        elif ! kill -0 "${PID[$n]}" 2>/dev/null; then state="NOT RUNNING: it exited or was killed from outside"; fi
        echo "    h$n: $(tokens_of "$n" | wc -l) of $(wc -l <"$work/expected") messages, tree $(lc "$n" get / 2>/dev/null | sha256sum | cut -c1-12), $state" >&2
    done
}

integrity() {  # integrity N: `lanchat check` of node N's data (store, chunk index, every chunk)
    lc "$1" check | tr '\n' ' ' | sed 's/ $//'
}

# ---------------------------------------------------------------------------------------------
run_setup setup_lan
init_and_start

# 1. Discovery by multicast alone: no --peer, broadcast beacons dropped.
t=$EPOCHREALTIME
until_true "$DEADLINE" all_see_the_others; ok=$?
took=$(elapsed "$t")
bcast=0 mcast=0
for n in "${HOSTS[@]}"; do
    bcast=$((bcast + $(nft_counter "$n" lanchat_tb 'pkttype broadcast')))
    mcast=$((mcast + $(nft_counter "$n" lanchat_tb 'pkttype multicast')))
done
[ "$ok" -eq 0 ] && [ "$mcast" -gt 0 ] || ok=1
[ "$ok" -eq 0 ] || for n in "${HOSTS[@]}"; do echo "    h$n: $(lc "$n" status --json 2>&1 | head -c 600)" >&2; done
check "$ok" "1 discovery by multicast alone: every node has the other 4 as peers" \
    "${took} s; $mcast multicast beacons heard, $bcast broadcast beacons dropped"

# 2. One message from each node reaches all.
t=$EPOCHREALTIME
for n in "${HOSTS[@]}"; do send "$n" "tb-hello-from-h$n"; done
until_true "$DEADLINE" converged "${HOSTS[@]}"; ok=$?
took=$(elapsed "$t")
[ "$ok" -eq 0 ] || describe_state
check "$ok" "2 a message from each node reaches all 5" "${took} s"

# 3. Partition: h3's cable is pulled at the switch; both sides write; the cable goes back.
cut=3 rest=(1 2 4 5)
ip -n "$SWITCH" link set "port$cut" down
t=$EPOCHREALTIME
# The partition is real once h3 hears nobody and nobody hears h3 (beacons stop for 6 s).
partitioned() {
    local n
    [ "$(heard_count "$cut")" == 0 ] || return 1
    for n in "${rest[@]}"; do [ "$(heard_count "$n")" == 3 ] || return 1; done
}
until_true "$DEADLINE" partitioned; ok=$?
took_split=$(elapsed "$t")
: >"$work/side-a"; : >"$work/side-b"
for i in 1 2 3; do send "$cut" "tb-partition-h$cut-$i" && echo "tb-partition-h$cut-$i" >>"$work/side-a"; done
for n in 1 2 4; do send "$n" "tb-partition-h$n" && echo "tb-partition-h$n" >>"$work/side-b"; done
# Each side gets its own writes while the other side sees none of them.
side_b_spread() { local n; for n in "${rest[@]}"; do has_tokens "$n" "$work/side-b" || return 1; done; }
[ "$ok" -eq 0 ] && until_true "$DEADLINE" side_b_spread || ok=1
isolated=0
lacks_tokens "$cut" "$work/side-b" || isolated=1
for n in "${rest[@]}"; do lacks_tokens "$n" "$work/side-a" || isolated=1; done
[ "$isolated" -eq 0 ] || { ok=1; echo "    the partition leaked: a side already holds the other's messages" >&2; }
ip -n "$SWITCH" link set "port$cut" up
t=$EPOCHREALTIME
[ "$ok" -eq 0 ] || describe_state
check "$ok" "3a partition isolates h$cut while both sides write" "peers lost after ${took_split} s"
until_true "$DEADLINE" converged "${HOSTS[@]}"; ok=$?
took=$(elapsed "$t")
[ "$ok" -eq 0 ] || describe_state
check "$ok" "3b after the partition heals all 5 converge, nothing lost" "${took} s after the link came up"

# 4. Crash during sync. h5 is stopped; h1 writes 300 messages; h5 starts and is killed with
# SIGKILL as soon as it logs its first session ("connected to"). h1 writes 100 more; h5 starts
# and is killed as soon as it logs its first stored batch ("received"), while other sessions may
# still be delivering. Each time its store must be sound; started once more, it must converge.
victim=5 others=(1 2 3 4)
stop_node "$victim" TERM
bulk_spread() { local n; for n in "${others[@]}"; do has_tokens "$n" "$work/bulk" || return 1; done; }
# start_and_kill_at N TRIGGER: starts node N and kills it with SIGKILL as soon as its log shows
# TRIGGER; fails if the node exits first or the line does not come within the deadline.
start_and_kill_at() {
    local n=$1 trigger=$2 failed=0 mark start
    mark=$(($(wc -l <"$work/h$n.log") + 1))
    start_node "$n"
    start=$EPOCHREALTIME
    until tail -n +"$mark" "$work/h$n.log" | grep -q "$trigger"; do   # a tight poll: a trigger, not a synchronisation
        awk -v a="$EPOCHREALTIME" -v s="$start" -v d="$DEADLINE" 'BEGIN { exit !(a - s >= d) }' && { failed=1; break; }
        kill -0 "${PID[$n]}" 2>/dev/null || { failed=1; break; }
        sleep 0.01
    done
    stop_node "$n" KILL
    echo "=== testbed: SIGKILL $(date +%T.%N)" >>"$work/h$n.log"
    return "$failed"
}
for round in "a:connected to:300" "b:received:100"; do
    IFS=: read -r label trigger count <<<"$round"
    : >"$work/bulk"
    for i in $(seq 1 "$count"); do
        send 1 "tb-bulk-$label-$i" && echo "tb-bulk-$label-$i" >>"$work/bulk"
    done
    until_true "$DEADLINE" bulk_spread; ok=$?
    start_and_kill_at "$victim" "$trigger" || ok=1
    at_kill=$(tokens_of "$victim" | grep -c "tb-bulk-$label-")
    crash_integrity=$(integrity "$victim" 2>&1)
    [ "$crash_integrity" == ok ] || { ok=1; echo "    integrity after the crash: $crash_integrity" >&2; }
    [ "$ok" -eq 0 ] || describe_state
    check "$ok" "4$label h$victim killed at its first '$trigger' line, store sound" \
        "held $at_kill of $count new messages at the kill; integrity $crash_integrity"
done
start_node "$victim"
t=$EPOCHREALTIME
until_true "$DEADLINE" converged "${HOSTS[@]}"; ok=$?
took=$(elapsed "$t")
final_integrity=$(integrity "$victim" 2>&1)
[ "$final_integrity" == ok ] || ok=1
[ "$ok" -eq 0 ] || describe_state
check "$ok" "4c restarted h$victim converges" "${took} s; integrity $final_integrity"

# 5. Packet loss: every host drops 20% of incoming UDP (beacons and pushed records) at random.
for n in "${HOSTS[@]}"; do
    ip netns exec "$(hostns "$n")" nft -f - <<'EOF'
table inet lanchat_tb_loss {
    chain input {
        type filter hook input priority -10; policy accept;
        meta l4proto udp numgen random mod 100 < 20 counter drop
    }
}
EOF
done
t=$EPOCHREALTIME
for n in "${HOSTS[@]}"; do for i in 1 2; do send "$n" "tb-lossy-h$n-$i"; done; done
until_true "$DEADLINE" converged "${HOSTS[@]}"; ok=$?
took=$(elapsed "$t")
dropped=0
for n in "${HOSTS[@]}"; do dropped=$((dropped + $(nft_counter "$n" lanchat_tb_loss 'numgen random'))); done
[ "$ok" -eq 0 ] || describe_state
check "$ok" "5 with 20% UDP loss all 5 converge" "${took} s; $dropped datagrams dropped"

# 6. A private group of all five hosts: h1 creates it, h1, h2, h3 and h5 write while h4's node is
# stopped; h4 comes back, is killed with SIGKILL as its first session opens and at its first
# stored batch, and started again: it must read every message. h6, a sixth host joining the LAN
# now, takes the same sealed records and reads none of them. (Last: members' trees differ from
# h6's from here on, so `converged` no longer applies.)
for n in "${HOSTS[@]}"; do ip netns exec "$(hostns "$n")" nft delete table inet lanchat_tb_loss 2>/dev/null; done
writers=(1 2 3 5) late=4 outsider=6
t=$EPOCHREALTIME
ok=0
add_lan_host "$outsider" >>"$work/setup.log" 2>&1 || ok=1
lc "$outsider" init --name "${NAMES[$outsider]}" >"$work/h$outsider.id" || ok=1
start_node "$outsider"
HOSTS+=("$outsider")
until_true 20 node_answers "$outsider" || ok=1
check "$ok" "6 a sixth host h$outsider joins the LAN" "$(elapsed "$t") s"
# private_tokens N: the group's message tokens node N reads, sorted.
private_tokens() { lc "$1" messages "$group" 2>/dev/null | grep -o 'tb-private-[a-z0-9-]*' | sort; }
reads_all() { [ -z "$(comm -23 "$work/private.sorted" <(private_tokens "$1"))" ]; }
members_read_all() { local n; for n in "$@"; do reads_all "$n" || return 1; done; }
knows_group() { local n; for n in "${writers[@]}"; do lc "$n" group members "$group" >/dev/null 2>&1 || return 1; done; }
records_of() { lc "$1" status --json 2>/dev/null | python3 -c 'import json, sys; print(json.load(sys.stdin)["records"])'; }
outsider_synced() { [ "$(records_of "$outsider")" == "$(records_of 1)" ]; }
stop_node "$late" TERM
t=$EPOCHREALTIME
group=$(lc 1 group create "Testbed plans" --member "$(cat "$work/h2.id")" --member "$(cat "$work/h3.id")" \
    --member "$(cat "$work/h$late.id")" --member "$(cat "$work/h5.id")")
ok=$?
[ "$ok" -eq 0 ] && until_true "$DEADLINE" knows_group || ok=1
# Five members, as the group's meta lists them.
members_listed=$(lc 1 group members "$group" 2>/dev/null | grep -c .)
[ "$members_listed" -eq 5 ] || ok=1
: >"$work/private"
for i in $(seq 1 15); do
    for n in "${writers[@]}"; do
        lc "$n" send "$group" "tb-private-h$n-$i" >/dev/null && echo "tb-private-h$n-$i" >>"$work/private" || ok=1
    done
done
sort "$work/private" >"$work/private.sorted"
[ "$ok" -eq 0 ] && until_true "$DEADLINE" members_read_all "${writers[@]}" || ok=1
[ "$ok" -eq 0 ] || { describe_state; lc 1 group members "$group" >&2; }
check "$ok" "6a a private group of all 5 hosts ($members_listed members), h$late offline: the 4 online read all $(wc -l <"$work/private") messages" "$(elapsed "$t") s"
ok=0
until_true "$DEADLINE" outsider_synced || ok=1
seen=$( { lc "$outsider" messages "$group" 2>/dev/null; lc "$outsider" get / 2>/dev/null; } | grep -c 'tb-private-')
[ "$seen" -eq 0 ] || ok=1
lc "$outsider" group members "$group" >/dev/null 2>&1 && ok=1
check "$ok" "6b non-member h$outsider holds the group's records ($(records_of "$outsider") in all) and reads none of them" "$seen tokens shown"
ok=0 at_kill="" crash_integrity=""
# Killed twice: as its first session opens (the group's sync just begun), then at its first
# stored batch (other sessions may still be delivering).
# Before each start the writers add a message each while h4 is down, so every start has records
# to receive: a first sync that ends before its kill must not leave the second start nothing to log.
for trigger in "connected to" "received"; do
    for n in "${writers[@]}"; do
        token="tb-private-h$n-${trigger// /-}"
        lc "$n" send "$group" "$token" >/dev/null && echo "$token" >>"$work/private" || ok=1
    done
    sort "$work/private" >"$work/private.sorted"
    start_and_kill_at "$late" "$trigger" || ok=1
    at_kill+="${at_kill:+, then }$(private_tokens "$late" | grep -c .)"
    result=$(integrity "$late" 2>&1)
    crash_integrity+="${crash_integrity:+, }$result"
    [ "$result" == ok ] || ok=1
done
start_node "$late"
t=$EPOCHREALTIME
until_true "$DEADLINE" reads_all "$late" || ok=1
[ "$ok" -eq 0 ] || describe_state
check "$ok" "6c h$late back, killed with SIGKILL mid-sync twice and started again, reads all $(wc -l <"$work/private") messages" \
    "read $at_kill at the kills, integrity $crash_integrity; all $(elapsed "$t") s after the last start"
ok=0
until_true "$DEADLINE" members_read_all "${writers[@]}" "$late" || ok=1
seen=$( { lc "$outsider" messages "$group" 2>/dev/null; lc "$outsider" get / 2>/dev/null; } | grep -c 'tb-private-')
[ "$seen" -eq 0 ] || ok=1
check "$ok" "6d all 5 member hosts read all $(wc -l <"$work/private") messages; h$outsider still reads none" "$seen tokens shown on h$outsider"

# Every node still runs: none crashed on its own (the kills of h5 and h4 were ours).
dead=""
for n in "${HOSTS[@]}"; do kill -0 "${PID[$n]:-0}" 2>/dev/null || dead+=" h$n"; done
check "$([ -z "$dead" ]; echo $?)" "every node is still running at the end" "${dead:+exited:$dead}"

# No node may have seen a protocol violation or failed to store: all peers here are honest.
if grep -hE 'banned (user|address) |could not store' "$work"/h*.log >"$work/violations"; then
    sed 's/^/    /' "$work/violations" | head -n 20 >&2
    check 1 "no protocol violations or store errors in the logs" "$(wc -l <"$work/violations") lines"
else
    check 0 "no protocol violations or store errors in the logs"
fi

echo "netns testbed: ran for $(elapsed "$started") s"
echo "netns testbed: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
