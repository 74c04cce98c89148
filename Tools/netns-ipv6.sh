#!/usr/bin/env bash
# Discovery and sync over IPv6 alone: three hosts in network namespaces on one bridge, where
# every IPv4 beacon (multicast and broadcast) is dropped by nftables and one host has no IPv4
# address at all. The nodes must find each other by IPv6 link-local multicast, hold sessions
# to each other's fe80:: addresses, and pass messages (by session and by pushed datagram).
#
# Usage: Tools/netns-ipv6.sh [path/to/lanchat]      (default .build/debug/lanchat; needs root)
#
# Topology: a "switch" namespace holding a bridge, and hosts lanchat-v6-h1..h3, each with lo and
# one veth (tb0) on the bridge; h1 and h2 also have 10.231.78.N/24 there, h3 only its link-local
# address. Nodes listen on 0.0.0.0:7000 (so also on [::]:7000) and beacon only on tb0.
set -uo pipefail
cd "$(dirname "$0")/.."

LABEL="netns ipv6"
PREFIX=lanchat-v6
SUBNET=10.231.78
PORT=7000
HOSTS=(1 2 3)
WITH_IPV4=(1 2)           # h3 has no IPv4 address
NAMES=("" "Alice Smith" "박준영" "Nguyễn Văn An")
DEADLINE=${NETNS_IPV6_DEADLINE:-60}   # seconds allowed per wait
source Tools/netns-harness.sh "$@"

# ---------------------------------------------------------------------------------------------
setup_lan() {
    local n ns
    add_switch || return 1
    for n in "${HOSTS[@]}"; do
        ns=$(hostns "$n")
        add_host "$n" || return 1
        # IPv6 on, whatever the host's defaults (everywhere and on the veth).
        ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=0 net.ipv6.conf.default.disable_ipv6=0 || return 1
        ip netns exec "$ns" sysctl -qw net.ipv6.conf.tb0.disable_ipv6=0 || return 1
        if [[ " ${WITH_IPV4[*]} " == *" $n "* ]]; then
            ip -n "$ns" addr add "$SUBNET.$n/24" brd + dev tb0
            ip -n "$ns" route add 224.0.0.0/4 dev tb0 2>/dev/null
        fi
        ip -n "$ns" link set tb0 up
        # Every IPv4 beacon is dropped, multicast and broadcast: only IPv6 can discover. The
        # counters show that IPv4 beacons did arrive (and were dropped), and IPv6 ones too, and
        # how many pushed records came as IPv6 datagrams to the session port.
        ip netns exec "$ns" nft -f - <<EOF || return 1
table inet lanchat_v6 {
    chain input {
        type filter hook input priority 0; policy accept;
        meta nfproto ipv4 udp dport 47777 meta pkttype broadcast counter drop
        meta nfproto ipv4 udp dport 47777 meta pkttype multicast counter drop
        meta nfproto ipv6 udp dport 47777 meta pkttype multicast counter
        meta nfproto ipv6 udp dport $PORT counter
    }
}
EOF
    done
}


start_node() {  # start_node N
    local n=$1
    ip netns exec "$(hostns "$n")" "$LANCHAT" run --data "$work/h$n" --listen "0.0.0.0:$PORT" \
        --discovery-interface tb0 >/dev/null 2>>"$work/h$n.log" 9>&- &
    PID[$n]=$!
}

# peers N: "USERID ADDRESS" of every peer node N has a session with or hears, sorted.
peers() {
    lc "$1" status --json 2>/dev/null | python3 -c '
import json, sys
status = json.load(sys.stdin)
print("\n".join(sorted(p["userID"] + " " + p["address"] for p in status["peers"] if p["discovered"] or p["connected"])))'
}
# Every node has every other as a peer, each at a scoped link-local address on the session port.
all_see_the_others_over_ipv6() {
    local n list
    for n in "${HOSTS[@]}"; do
        list=$(peers "$n")
        [ "$(cut -d' ' -f1 <<<"$list")" == "$(others_of "$n")" ] || return 1
        [ -z "$(grep -v " \[fe80::[0-9a-f:]*%[0-9]*\]:$PORT\$" <<<"$list")" ] || return 1
    done
}

: >"$work/expected"
tokens_of() { lc "$1" messages general 2>/dev/null | grep -o 'v6-[a-z0-9-]*' | sort; }
converged() {
    local n
    for n in "${HOSTS[@]}"; do cmp -s <(tokens_of "$n") <(sort "$work/expected") || return 1; done
}

# total PATTERN: packets counted by the rules matching PATTERN, over all hosts.
total() { local n sum=0; for n in "${HOSTS[@]}"; do sum=$((sum + $(nft_counter "$n" lanchat_v6 "$1"))); done; echo "$sum"; }

# ---------------------------------------------------------------------------------------------
run_setup setup_lan
t=$EPOCHREALTIME
ok=0
for n in "${HOSTS[@]}"; do until_true 30 dad_done "$n" || ok=1; done
[ "$ok" -eq 0 ] || for n in "${HOSTS[@]}"; do ip -n "$(hostns "$n")" -6 addr show dev tb0 >&2; done
check "$ok" "0 every veth has a link-local address past DAD" "$(elapsed "$t") s"
[ "$ok" -eq 0 ] || { echo "netns ipv6: $passed passed, $failed failed"; exit 1; }

init_and_start

# 1. Discovery by IPv6 link-local multicast alone.
t=$EPOCHREALTIME
until_true "$DEADLINE" all_see_the_others_over_ipv6; ok=$?
took=$(elapsed "$t")
v4_dropped=$(total 'nfproto ipv4'); v6_heard=$(total 'nfproto ipv6 udp dport 47777')
[ "$ok" -eq 0 ] && [ "$v6_heard" -gt 0 ] && [ "$v4_dropped" -gt 0 ] || ok=1
[ "$ok" -eq 0 ] || for n in "${HOSTS[@]}"; do echo "    h$n peers: $(peers "$n" | tr '\n' ';')" >&2; done
check "$ok" "1 discovery over IPv6 alone: each node has the other 2 as peers at fe80:: addresses" \
    "${took} s; $v6_heard IPv6 beacons heard, $v4_dropped IPv4 beacons dropped"

# 2. One message from each node reaches all, by sessions and datagrams over IPv6.
t=$EPOCHREALTIME
for n in "${HOSTS[@]}"; do
    lc "$n" send general "v6-hello-from-h$n" >/dev/null && echo "v6-hello-from-h$n" >>"$work/expected"
done
until_true "$DEADLINE" converged; ok=$?
took=$(elapsed "$t")
pushes=$(total "nfproto ipv6 udp dport $PORT")
[ "$ok" -eq 0 ] || for n in "${HOSTS[@]}"; do echo "    h$n holds: $(tokens_of "$n" | tr '\n' ' ')" >&2; done
check "$ok" "2 a message from each node is read on the other 2" "${took} s"

# 3. The sessions ran over IPv6 link-local, and pushed records went as IPv6 datagrams.
sessions=$(cat "$work"/h*.log | grep -c 'connected to .* at \[fe80::')
[ "$sessions" -gt 0 ] && [ "$pushes" -gt 0 ]
check $? "3 sessions and pushed records went over IPv6" "$sessions session lines at fe80::, $pushes datagrams to [::]:$PORT"

# No node crashed, broke the protocol, failed to dial or fell back to IPv4 only.
dead=""
for n in "${HOSTS[@]}"; do kill -0 "${PID[$n]:-0}" 2>/dev/null || dead+=" h$n"; done
check "$([ -z "$dead" ]; echo $?)" "every node is still running" "${dead:+exited:$dead}"
if grep -hE 'banned (user|address) |could not store|could not connect|IPv4 only' "$work"/h*.log >"$work/problems"; then
    sed 's/^/    /' "$work/problems" | head -n 20 >&2
    check 1 "no protocol violations, failed dials or store errors in the logs" "$(wc -l <"$work/problems") lines"
else
    check 0 "no protocol violations, failed dials or store errors in the logs"
fi

echo "netns ipv6: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
