#!/usr/bin/env bash
# Browser tests of the web chat: two real nodes on loopback, each with its own headless Chromium
# signed in through `lanchat open`. A finds B in the users search, opens their conversation, sends
# a text and a photo; B's page shows both without reloading; B replies; profiles and a narrow
# window; a private group of A and B that a third node C's page does not list, B removed from it.
# Screenshots of every screen are kept in .build/web-artifacts/ (printed at the end).
# Usage: Tools/web-test.sh [path/to/lanchat]
set -uo pipefail
cd "$(dirname "$0")/.."
LANCHAT=${1:-.build/debug/lanchat}
ARTIFACTS=${WEB_ARTIFACTS:-$PWD/.build/web-artifacts}

if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then
    echo "installing chromium and chromium-driver" >&2
    if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >&2; then
        apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >&2 || {
            echo "web: 0 passed, 1 failed (could not install chromium and chromium-driver)"; exit 1; }
    fi
fi
py=$(Tools/python-env) || { echo "web: 0 passed, 1 failed (no python environment with selenium)"; exit 1; }

. Tools/harness.sh

has_api() { grep -q '"api"' "$1" 2>/dev/null; }

port_base=$(Tools/free-ports 4) || { echo "web: 0 passed, 1 failed"; exit 1; }
"$LANCHAT" init --data "$work/a" --name "Alice Smith" --email alice@example.org >/dev/null || exit 1
"$LANCHAT" init --data "$work/b" --name "Bùi Thị Bích" --email bich@example.vn >/dev/null || exit 1
"$LANCHAT" init --data "$work/c" --name "Chidi Okafor" --email chidi@example.ng >/dev/null || exit 1
"$LANCHAT" run --data "$work/a" --listen 127.0.0.1:$((port_base + 1)) --no-discovery --api 127.0.0.1:0 2>>"$work/a.log" &
pids+=($!)
"$LANCHAT" run --data "$work/b" --listen 127.0.0.1:$((port_base + 2)) --no-discovery --peer 127.0.0.1:$((port_base + 1)) --api 127.0.0.1:0 2>>"$work/b.log" &
pids+=($!)
# C (no member of the private group) is started by web-test.py when the group is made, so that
# syncing the long conversation to it does not slow A's node during the timed checks before.
export WEB_TEST_A_LISTEN=127.0.0.1:$((port_base + 1)) WEB_TEST_C_LISTEN=127.0.0.1:$((port_base + 3))
for n in a b; do
    until_true 15 has_api "$work/$n/node.json" || { echo "node $n did not start" >&2; cat "$work/$n.log" >&2; echo "web: 0 passed, 1 failed"; exit 1; }
done

rm -rf "$ARTIFACTS" && mkdir -p "$ARTIFACTS"
"$py" Tools/web-test.py --lanchat "$LANCHAT" --work "$work" --artifacts "$ARTIFACTS"
status=$?
if [ "$status" -ne 0 ]; then for n in a b c; do echo "--- node $n log" >&2; tail -20 "$work/$n.log" >&2; done; fi
echo "web artifacts (screenshots): $ARTIFACTS"
exit "$status"
