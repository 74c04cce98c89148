#!/usr/bin/env bash
# `lanchat doctor` on hosts whose network is in the way: three hosts in network namespaces on one
# bridge. h1's nftables drop the discovery port (UDP 47777) and the session port (TCP 7000):
# doctor must name both causes and exit 1. h3's do the same but trust loopback first, as many
# firewalls do (so connecting to itself passes): doctor must still name both. h2's network is
# clean: doctor must see its beacons come back and exit 0; then another program takes UDP 47777
# (without SO_REUSEPORT), and its data directory is opened to other users, and doctor must name
# each.
#
# Usage: Tools/netns-doctor.sh [path/to/lanchat]      (default .build/debug/lanchat; needs root)
set -uo pipefail
cd "$(dirname "$0")/.."

LABEL="netns doctor"
PREFIX=lanchat-dr
SUBNET=10.231.79
PORT=7000
HOSTS=(1 2 3)
NAMES=("" "Alice Smith" "Bob Jones" "Carol White")
source Tools/netns-harness.sh "$@"

setup_lan() {
    local n
    add_switch || return 1
    for n in "${HOSTS[@]}"; do add_ipv4_host "$n" || return 1; done
    ip netns exec "$(hostns 1)" nft -f - <<NFT || return 1
table inet lanchat_doctor {
    chain input {
        type filter hook input priority 0; policy accept;
        udp dport 47777 counter drop
        tcp dport $PORT counter drop
    }
}
NFT
    ip netns exec "$(hostns 3)" nft -f - <<NFT || return 1
table inet lanchat_doctor {
    chain input {
        type filter hook input priority 0; policy accept;
        iif "lo" accept
        udp dport 47777 counter drop
        tcp dport $PORT counter drop
    }
}
NFT
}
run_setup setup_lan
for n in "${HOSTS[@]}"; do
    lc "$n" init --name "${NAMES[$n]}" >"$work/h$n.id" || { failed=$((failed + 1)); echo "FAIL init h$n"; }
done
setup_ok=1
# Doctor's IPv6 probes need each host's link-local address past duplicate address detection.
for n in "${HOSTS[@]}"; do until_true 30 dad_done "$n"; done

# doctor N ARGS...: runs doctor on host N; output in $work/doctor-hN.txt, status in $doctor_status.
doctor() {
    local n=$1; shift
    lc "$n" doctor "$@" >"$work/doctor-h$n.txt" 2>&1
    doctor_status=$?
    sed 's/^/    /' "$work/doctor-h$n.txt"
}
says() { grep -q -- "$2" "$work/doctor-h$1.txt"; }

echo "h1 (nftables drop UDP 47777 and TCP $PORT):"
doctor 1 --listen "0.0.0.0:$PORT"
[ "$doctor_status" -eq 1 ]; check $? "doctor exits 1 on h1" "status $doctor_status"
says 1 "PROBLEM  a firewall drops the discovery port: datagrams through tb0 ($SUBNET.1) come back on a free UDP port but not on port 47777"
check $? "doctor names the firewall dropping the discovery port"
says 1 "udp dport 47777 counter packets [0-9]* bytes [0-9]* drop"
check $? "doctor quotes the nftables rule"
says 1 "PROBLEM  session port $PORT is not reachable at $SUBNET.1 (tb0) while a free port is"
check $? "doctor names the firewall dropping the session port"
if dad_done 1; then
    says 1 "PROBLEM  a firewall drops the discovery port over IPv6: link-local multicast through tb0 comes back on a free UDP port but not on port 47777"
    check $? "doctor names the firewall dropping IPv6 beacons"
else
    echo "skip doctor names the firewall dropping IPv6 beacons (no IPv6 link-local address on h1's tb0)"
fi
[ "$(nft_counter 1 lanchat_doctor 'udp dport 47777')" -gt 0 ]
check $? "the probes did reach h1's firewall" "$(nft_counter 1 lanchat_doctor 'udp dport 47777') dropped"

echo "h3 (nftables trust loopback, then drop UDP 47777 and TCP $PORT):"
doctor 3 --listen "0.0.0.0:$PORT"
[ "$doctor_status" -eq 1 ]; check $? "doctor exits 1 on h3" "status $doctor_status"
says 3 "PROBLEM  a firewall drops the discovery port: datagrams through tb0 ($SUBNET.3) come back on a free UDP port but not on port 47777"
check $? "doctor names the firewall dropping the discovery port though loopback is trusted"
says 3 "PROBLEM  the firewall drops the session port $PORT: tcp dport $PORT counter packets [0-9]* bytes [0-9]* drop"
check $? "doctor finds the rule dropping the session port though connecting to itself works"

echo "h2 (clean):"
doctor 2 --listen "0.0.0.0:$PORT"
[ "$doctor_status" -eq 0 ]; check $? "doctor exits 0 on h2" "status $doctor_status"
says 2 "ok       beacons through tb0 ($SUBNET.2) come back by multicast and broadcast on UDP port 47777"
check $? "doctor sees h2's beacons come back through tb0"
says 2 "ok       session port $PORT is reachable"
check $? "doctor finds h2's session port reachable"

echo "h2 with a node running on discovery port 47800 (given on its command line only):"
ip netns exec "$(hostns 2)" "$LANCHAT" run --data "$work/h2" --listen "0.0.0.0:$PORT" --discovery-port 47800 2>"$work/h2.log" &
PID[2]=$!
until_true 20 node_answers 2
doctor 2
kill -TERM "${PID[2]}"; wait_exit "${PID[2]}" 5; unset 'PID[2]'
[ "$doctor_status" -eq 0 ]; check $? "doctor exits 0 beside a running node" "status $doctor_status"
says 2 "ok       UDP port 47800 is shared with lanchat (pid [0-9]*)" && says 2 "ok       session port $PORT is reachable"
check $? "doctor checks the ports the running node uses"

echo "h2 with another program on UDP 47777:"
ip netns exec "$(hostns 2)" python3 -c '
import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("0.0.0.0", 47777))
print("bound", flush=True)
time.sleep(60)' >"$work/squatter.log" 2>&1 &
squatter=$!
until_true 10 grep -q bound "$work/squatter.log"
doctor 2
kill "$squatter" 2>/dev/null; wait "$squatter" 2>/dev/null
[ "$doctor_status" -eq 1 ]; check $? "doctor exits 1 when the discovery port is taken" "status $doctor_status"
says 2 "PROBLEM  UDP port 47777 cannot be shared .*another program holds it: python3 (pid $squatter)"
check $? "doctor names the program holding the discovery port"

echo "h2 with a data directory others can read:"
chmod 755 "$work/h2"
doctor 2
chmod 700 "$work/h2"
[ "$doctor_status" -eq 1 ]; check $? "doctor exits 1 on an open data directory" "status $doctor_status"
says 2 "PROBLEM  data directory $work/h2 has mode 755"
check $? "doctor names the data directory's permissions"

echo "$LABEL: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
