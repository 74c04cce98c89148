# Shared by the test scripts under Tools/ (source it): a work directory removed on exit with
# every node started into `pids`, a check counter, and polling with a deadline (never a bare
# sleep as synchronisation).
work=$(mktemp -d)
pids=()
harness_cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$work"; }
trap harness_cleanup EXIT
passed=0 failed=0

# check NAME EXPECTED ACTUAL
check() {
    if [ "$2" == "$3" ]; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL $1: expected [$2] got [$3]" >&2; fi
}

# until_true DEADLINE_SECONDS COMMAND...: polls the condition every 0.1 s until it holds.
until_true() {
    local deadline=$(( $(date +%s) + $1 )); shift
    while ! "$@"; do
        [ "$(date +%s)" -ge "$deadline" ] && return 1
        sleep 0.1
    done
}
