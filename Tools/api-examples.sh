#!/usr/bin/env bash
# Runs the curl examples of the README against a live node and checks each answer against the
# "# -> ..." line that follows it, so the README cannot drift from what the API does.
# Usage: Tools/api-examples.sh [path/to/lanchat]
set -uo pipefail
cd "$(dirname "$0")/.."
LANCHAT=${1:-.build/debug/lanchat}
work=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT
"$LANCHAT" init --data "$work/n" --name "Example User" >/dev/null
"$LANCHAT" run --data "$work/n" --no-discovery --listen 127.0.0.1:0 --api-token owner 2>"$work/log" &
pid=$!
deadline=$(( $(date +%s) + 20 ))
until API=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['api'])" "$work/n/node.json" 2>/dev/null); do
    [ "$(date +%s)" -ge "$deadline" ] && { echo "node did not start"; cat "$work/log"; exit 1; }
    sleep 0.1
done
export API TOKEN=owner
passed=0 failed=0
command=""
while IFS= read -r line; do
    case "$line" in
        curl*) command=$line ;;
        "# ->"*)
            expected=${line#"# ->"}; expected=${expected# }
            actual=$(eval "$command")
            if [ "$actual" == "$expected" ]; then passed=$((passed + 1)); else
                failed=$((failed + 1)); echo "FAIL: $command"$'\n'"  expected: $expected"$'\n'"  got:      $actual" >&2
            fi ;;
    esac
done < <(sed -n '/<!-- api-examples -->/,/<!-- \/api-examples -->/p' README.md)
echo "api examples: $passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
