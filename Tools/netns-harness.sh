# Shared by the network-namespace tests (source it with the script's arguments, after setting
# LABEL, PREFIX and HOSTS): root and tool checks, the lanchat binary, one run at a time, the
# namespaces torn down before and after (with every process inside them), a work directory kept
# when something failed, report lines, polling with a deadline, and the virtual switch.
#
#   LABEL   how the script names itself in its output, e.g. "netns testbed"
#   PREFIX  the prefix of every namespace it creates, e.g. "lanchat-tb"
#   HOSTS   the host numbers, e.g. (1 2 3); host N is namespace $PREFIX-hN with a veth tb0
#
# The script sets setup_ok=1 once its nodes run; until then a failure keeps the work directory.
# Without root the script is skipped: it exits 77 (Tools/test's convention), not 0.

# skip_run WHY: this run cannot happen here; says why and exits 77, which Tools/test counts as
# a skipped step (never as a pass).
skip_run() {
    echo "$LABEL: SKIPPED: $1"
    if [ -n "${LANCHAT_SKIP_FILE:-}" ]; then printf '%s\n' "$1" >"$LANCHAT_SKIP_FILE"; fi
    exit 77
}

if [ "$(id -u)" -ne 0 ]; then
    skip_run "needs root (network namespaces, bridges, nftables)"
fi
LANCHAT=${1:-.build/debug/lanchat}
[ -x "$LANCHAT" ] || { echo "$LABEL: no lanchat binary at $LANCHAT (build it first)" >&2; exit 1; }
LANCHAT=$(realpath "$LANCHAT")
command -v ip >/dev/null || { echo "$LABEL: needs ip (iproute2)" >&2; exit 1; }
if ! command -v nft >/dev/null; then
    echo "$LABEL: installing nftables" >&2
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nftables; } >/dev/null 2>&1
    command -v nft >/dev/null || { echo "$LABEL: needs nft (apt-get install nftables)" >&2; exit 1; }
fi
command -v python3 >/dev/null || { echo "$LABEL: needs python3 (sqlite3, JSON)" >&2; exit 1; }

SWITCH=$PREFIX-sw

# One run at a time: the namespace names are fixed. Node processes do not inherit the lock.
exec 9>"/run/lock/$PREFIX.lock"
flock -w 900 9 || { echo "$LABEL: another run holds /run/lock/$PREFIX.lock" >&2; exit 1; }

hostns() { echo "$PREFIX-h$1"; }

# Removes this script's namespaces, first ending the processes still inside them (by pid: only
# nodes this script started run there).
teardown_namespaces() {
    local ns pids
    for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^$PREFIX-"); do
        pids=$(ip netns pids "$ns" 2>/dev/null)
        if [ -n "$pids" ]; then
            kill -TERM $pids 2>/dev/null
            for _ in $(seq 50); do
                pids=$(ip netns pids "$ns" 2>/dev/null); [ -z "$pids" ] && break; sleep 0.1
            done
            [ -n "$pids" ] && kill -KILL $pids 2>/dev/null
        fi
        ip netns del "$ns" 2>/dev/null
    done
}
teardown_namespaces   # leftovers of an aborted run

work=$(mktemp -d "${TMPDIR:-/tmp}/$PREFIX.XXXXXX")
declare -A PID=()
passed=0 failed=0 setup_ok=0
started=$EPOCHREALTIME

cleanup() {
    local n
    for n in "${!PID[@]}"; do kill -TERM "${PID[$n]}" 2>/dev/null; done
    for n in "${!PID[@]}"; do wait_exit "${PID[$n]}" 5 || kill -KILL "${PID[$n]}" 2>/dev/null; done
    wait 2>/dev/null
    teardown_namespaces
    if [ "$failed" -eq 0 ] && [ "$setup_ok" -eq 1 ] && [ -z "${interrupted:-}" ] && [ -z "${NETNS_KEEP:-}" ]; then
        rm -rf "$work"
    else
        echo "$LABEL: logs and data kept in $work" >&2
    fi
}
trap cleanup EXIT
trap 'interrupted=1; exit 130' INT TERM

elapsed() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }'; }

# wait_exit PID SECONDS: wait until the process has ended.
wait_exit() {
    local i
    for ((i = 0; i < $2 * 10; i++)); do kill -0 "$1" 2>/dev/null || return 0; sleep 0.1; done
    ! kill -0 "$1" 2>/dev/null
}

# until_true SECONDS COMMAND...: poll a condition every 0.2 s until it holds or the deadline passes.
until_true() {
    local end
    end=$(awk -v a="$EPOCHREALTIME" -v s="$1" 'BEGIN { printf "%.3f", a + s }'); shift
    while ! "$@"; do
        awk -v a="$EPOCHREALTIME" -v e="$end" 'BEGIN { exit !(a >= e) }' && return 1
        sleep 0.2
    done
}

# check OK NAME DETAIL: one report line per check.
check() {
    if [ "$1" -eq 0 ]; then
        passed=$((passed + 1)); echo "ok   $2${3:+ ($3)}"
    else
        failed=$((failed + 1)); echo "FAIL $2${3:+ ($3)}"; show_logs
    fi
}
show_logs() {
    local n
    for n in "${HOSTS[@]}"; do
        echo "--- h$n log (last 15 lines):" >&2
        tail -n 15 "$work/h$n.log" 2>/dev/null | sed 's/^/    /' >&2
    done
}

# lc N COMMAND ARGS...: a lanchat command on node N's data directory, inside its namespace.
lc() { local n=$1 cmd=$2; shift 2; ip netns exec "$(hostns "$n")" "$LANCHAT" "$cmd" --data "$work/h$n" "$@"; }
node_answers() { lc "$1" status --json >/dev/null 2>&1; }
# others_of N: the user ids of every host but N, sorted.
others_of() { local m; for m in "${HOSTS[@]}"; do [ "$m" == "$1" ] || cat "$work/h$m.id"; done | sort; }

# nft_counter N TABLE PATTERN: packets counted by the rules of TABLE matching PATTERN.
nft_counter() {
    ip netns exec "$(hostns "$1")" nft list table inet "$2" 2>/dev/null |
        grep -- "$3" | grep -o 'packets [0-9]*' | awk '{s += $2} END {print s + 0}'
}

# The switch: a namespace holding a bridge that floods multicast like a plain switch (no
# snooping, so no IGMP/MLD querier is needed).
add_switch() {
    ip netns add "$SWITCH" || return 1
    ip -n "$SWITCH" link set lo up
    ip -n "$SWITCH" link add br0 type bridge mcast_snooping 0 || return 1
    ip -n "$SWITCH" link set br0 up
}

# add_host N: host N's namespace with lo up and a veth tb0 plugged into the switch (not yet up,
# no address: the caller configures it).
add_host() {
    local ns
    ns=$(hostns "$1")
    ip netns add "$ns" || return 1
    ip -n "$ns" link set lo up
    ip -n "$SWITCH" link add "port$1" type veth peer name tb0 netns "$ns" || return 1
    ip -n "$SWITCH" link set "port$1" master br0 up
}

# add_ipv4_host N: add_host, then tb0 up with $SUBNET.N/24 (and its broadcast address) and a
# route for IPv4 multicast through it.
add_ipv4_host() {
    local ns
    ns=$(hostns "$1")
    add_host "$1" || return 1
    ip -n "$ns" addr add "$SUBNET.$1/24" brd + dev tb0
    ip -n "$ns" link set tb0 up
    ip -n "$ns" route add 224.0.0.0/4 dev tb0
}

# dad_done N: node N's veth has a link-local address that passed duplicate address detection
# (an address still "tentative" cannot be a source, so beacons would not leave yet).
dad_done() {
    local out
    out=$(ip -n "$(hostns "$1")" -6 addr show dev tb0 scope link 2>/dev/null)
    [[ "$out" == *"inet6 fe80:"* ]] && [[ "$out" != *tentative* ]]
}

# run_setup FUNCTION: runs the script's LAN setup, or reports the failure and exits.
run_setup() {
    echo "$LABEL: $LANCHAT, work dir $work"
    if ! "$1" >"$work/setup.log" 2>&1; then
        cat "$work/setup.log" >&2
        failed=$((failed + 1)); echo "FAIL setting up the namespaces"
        echo "$LABEL: $passed passed, $failed failed"; exit 1
    fi
}

# init_and_start: `lanchat init` on every host, then start_node (the script's) on each and wait
# until every node answers.
init_and_start() {
    local n
    for n in "${HOSTS[@]}"; do
        lc "$n" init --name "${NAMES[$n]}" >"$work/h$n.id" || { failed=$((failed + 1)); echo "FAIL init h$n"; }
    done
    for n in "${HOSTS[@]}"; do start_node "$n"; done
    for n in "${HOSTS[@]}"; do
        until_true 20 node_answers "$n" || { failed=$((failed + 1)); echo "FAIL node h$n did not start"; show_logs; }
    done
    setup_ok=1
}
