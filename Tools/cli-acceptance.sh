#!/usr/bin/env bash
# End-to-end checks of the lanchat binary as a user runs it: real processes, real files.
# Usage: Tools/cli-acceptance.sh [path/to/lanchat]
set -uo pipefail
cd "$(dirname "$0")/.."
LANCHAT=${1:-.build/debug/lanchat}
. Tools/harness.sh
lc() { "$LANCHAT" "$@"; }

# Firebase semantics through the CLI.
A="$work/a"
lc init --data "$A" --name "Alice Smith" >/dev/null
lc set --data "$A" /a '{"b":1,"c":{"d":2}}'
lc update --data "$A" /a '{"c/d":3,"e":null}'
check "update" '{"b":1,"c":{"d":3}}' "$(lc get --data "$A" /a)"
lc delete --data "$A" /a/b
check "delete" '{"c":{"d":3}}' "$(lc get --data "$A" /a)"

# Canonically equivalent keys are one key (Protocol.md §5.1): "café" spelled with U+00E9 (NFC)
# and with "e" + U+0301 (NFD) is one key, shown in NFC, and the later write wins.
nfc=$(printf 'caf\xc3\xa9') nfd=$(printf 'cafe\xcc\x81')
lc set --data "$A" "/k/$nfc" '"first"'
lc set --data "$A" "/k/$nfd" '"second"'
check "one key per spelling" "{\"$nfc\":\"second\"}" "$(lc get --data "$A" /k)"
check "read in the other spelling" '"second"' "$(lc get --data "$A" "/k/$nfc")"
lc delete --data "$A" "/k/$nfd"
check "delete in the other spelling" null "$(lc get --data "$A" /k)"

# Errors: one line on stderr, a non-zero status, nothing changed.
before=$(lc get --data "$A" /)
lc set --data "$A" /a '{nope' 2>"$work/err"; check "bad json status" 64 $?
check "bad json message" 1 "$(grep -c '^Error: invalid JSON' "$work/err")"
lc get --data "$work/missing" / 2>"$work/err"; check "missing dir status" 1 $?
check "missing dir message" 1 "$(grep -c 'run `lanchat init' "$work/err")"
check "unchanged" "$before" "$(lc get --data "$A" /)"

# Two nodes that wrote concurrently converge by export/import, in either order.
for order in ab ba; do
    X="$work/x-$order" Y="$work/y-$order"
    lc init --data "$X" --name "Nguyễn Văn An" >/dev/null
    lc init --data "$Y" --name "박준영" >/dev/null
    lc set --data "$X" /topic '"from x"'; lc set --data "$Y" /topic '"from y"'
    lc send --data "$X" general "xin chào" >/dev/null; lc send --data "$Y" general "안녕하세요" >/dev/null
    lc update --data "$X" /settings '{"theme":"dark","lang":"vi"}'; lc update --data "$Y" /settings '{"theme":"light"}'
    lc export --data "$X" >"$work/x.lcx" 2>/dev/null; lc export --data "$Y" >"$work/y.lcx" 2>/dev/null
    if [ $order = ab ]; then
        lc import --data "$Y" "$work/x.lcx" 2>/dev/null; lc import --data "$X" "$work/y.lcx" 2>/dev/null
    else
        lc import --data "$X" "$work/y.lcx" 2>/dev/null; lc import --data "$Y" "$work/x.lcx" 2>/dev/null
    fi
    check "converged ($order)" "$(lc get --data "$X" /)" "$(lc get --data "$Y" /)"
    check "both messages ($order)" 2 "$(lc messages --data "$X" general | wc -l)"
done

# One flipped bit in one record: that record is refused, the rest stored, the store sound.
python3 - "$work/y.lcx" "$work/flipped.lcx" <<'PY'
import sys
data = bytearray(open(sys.argv[1], 'rb').read())
offset = 16 + 4 + int.from_bytes(data[16:20], 'big')   # the second record's frame
data[offset + 4 + 50] ^= 0x10
open(sys.argv[2], 'wb').write(data)
PY
F="$work/f"
lc init --data "$F" --name "Alice Smith" >/dev/null
lc import --data "$F" "$work/flipped.lcx" 2>"$work/err"; check "flipped status" 1 $?
check "flipped reported" 1 "$(grep -c '^record #2 refused:' "$work/err")"
check "others stored" 1 "$(grep -c 'imported 3 new records' "$work/err")"
check "integrity" ok "$(lc check --data "$F")"

echo "cli acceptance: $passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
