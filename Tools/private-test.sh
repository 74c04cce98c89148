#!/usr/bin/env bash
# Real processes on loopback: Alice and Bob reach each other only through Carol, who is not a
# member of their private group (--peer, discovery off). Bob reads Alice's messages; Carol
# stores and relays every record but her tree shows nothing of the group and the plaintext is
# nowhere in her data directory; after Bob's removal he receives the new records but cannot read
# them. Alice's typing flag and read receipt reach Bob through Carol too, sealed: Carol shows and
# keeps nothing of them, and Bob, removed, shows them no more. A photo sent to the group is sealed: Bob's node serves it opened, byte for byte; Carol
# relays its chunks and neither its bytes nor its key are in her data directory. An independent reader (Tools/interop/private_interop.py, PyNaCl) decrypts a message from
# an export stream with a member's key and reads nothing with Carol's.
# Usage: Tools/private-test.sh [path/to/lanchat]
set -uo pipefail
cd "$(dirname "$0")/.."
LANCHAT=${1:-.build/debug/lanchat}
PY=$(Tools/python-env) || { echo "private: cannot set up Python" >&2; exit 1; }
. Tools/harness.sh

declare -A addr_of
start() {  # start NAME [extra args]
    local n=$1; shift
    rm -f "$work/$n/node.json"
    "$LANCHAT" run --data "$work/$n" --listen 127.0.0.1:0 --no-discovery --api 127.0.0.1:0 --api-token "token-$n" "$@" 2>>"$work/$n.log" &
    pids+=($!)
    until_true 10 test -f "$work/$n/node.json" || { echo "private: node $n did not start" >&2; exit 1; }
    addr_of[$n]=$(grep -o '"listen":"[^"]*"' "$work/$n/node.json" | cut -d'"' -f4)
}
alice=$("$LANCHAT" init --data "$work/alice" --name "Alice Smith")
bob=$("$LANCHAT" init --data "$work/bob" --name "Bob Jones")
carol=$("$LANCHAT" init --data "$work/carol" --name "Carol Relay")
start carol
start alice --peer "${addr_of[carol]}"
start bob --peer "${addr_of[carol]}"

records() { "$LANCHAT" status --data "$work/$1" | awk '/^records:/ {print $2}'; }
synced() { [ "$(records "$1")" == "$(records alice)" ]; }

secret="the eagle lands at midnight"
cid=$("$LANCHAT" group create --data "$work/alice" "Operation Owl" --member "$bob")
check "group id" 1 "$([[ "$cid" == g_* ]] && echo 1)"
"$LANCHAT" send --data "$work/alice" "$cid" "$secret" >/dev/null
dm=$("$LANCHAT" dm --data "$work/alice" -- "$bob")
check "the direct conversation has one id from both sides" "$dm" "$("$LANCHAT" dm --data "$work/bob" -- "$alice")"
"$LANCHAT" send --data "$work/alice" "$dm" "just between us" >/dev/null

reads() { "$LANCHAT" messages --data "$work/bob" "$1" | grep -q -- "$2"; }
until_true 30 reads "$cid" "$secret"; check "bob reads alice's group message (relayed by carol)" 0 $?
until_true 30 reads "$dm" "just between us"; check "bob reads alice's direct message" 0 $?
check "bob sees the members" 2 "$("$LANCHAT" group members --data "$work/bob" "$cid" | wc -l)"
check "bob sees alice as creator" 1 "$("$LANCHAT" group members --data "$work/bob" "$cid" | grep -c -- "$alice.*(creator)")"
"$LANCHAT" send --data "$work/bob" "$cid" "roger that" >/dev/null
alice_reads() { "$LANCHAT" messages --data "$work/alice" "$cid" | grep -q "roger that"; }
until_true 30 alice_reads; check "alice reads bob's reply" 0 $?

# A photo: sealed under its own key, its chunks relayed by carol, opened by bob's node only.
{ printf '\x89PNG\r\n\x1a\n'; head -c 300000 /dev/urandom; } > "$work/photo.png"
photo_key=$("$LANCHAT" send-image --data "$work/alice" "$cid" "$work/photo.png" 2>"$work/send-image.err")
check "alice sends a photo to the group" 0 $?
api_of() { grep -o '"api":"[^"]*"' "$work/$1/node.json" | cut -d'"' -f4; }
photo_url() { "$LANCHAT" get --data "$work/$1" "/conversations/$cid/messages/$photo_key/photoURL" | tr -d '"'; }
has_photo_url() { [[ "$(photo_url bob)" == gs://lanchat/images/* ]]; }
until_true 30 has_photo_url; check "bob sees the photo message" 0 $?
photo_path=$(photo_url bob); photo_path=${photo_path#gs://lanchat/}
download() {  # download NODE OUT: the photo through NODE's storage API; prints the HTTP status
    curl -s -o "$2" -w '%{http_code}' -H "Authorization: Bearer token-$1" \
        "http://$(api_of "$1")/v0/b/lanchat/o/$(printf %s "$photo_path" | sed 's|/|%2F|g')?alt=media"
}
bob_has_photo() { [ "$(download bob "$work/bob-photo.png")" == 200 ]; }
until_true 60 bob_has_photo; check "bob's node serves the photo (relayed by carol)" 0 $?
cmp -s "$work/photo.png" "$work/bob-photo.png"; check "bob gets alice's photo bytes exactly" 0 $?
"$LANCHAT" get-file --data "$work/bob" "$photo_path" "$work/bob-get.png" 2>/dev/null
cmp -s "$work/photo.png" "$work/bob-get.png"; check "get-file on bob writes the photo opened" 0 $?
carol_has_chunks() { "$LANCHAT" files --data "$work/carol" images/ | grep -q complete; }
until_true 30 carol_has_chunks; check "carol holds the photo's chunks (to relay them)" 0 $?
check "carol's node cannot open the photo" 403 "$(download carol "$work/carol-photo")"
photo_in() {  # files of NODE's data directory holding a 64-byte run of the photo (three places in it)
    "$PY" - "$work/photo.png" "$work/$1" <<'PYEOF'
import os, sys
photo = open(sys.argv[1], "rb").read()
runs = [photo[i:i + 64] for i in (20, 150000, len(photo) - 64)]
found = 0
for root, _, names in os.walk(sys.argv[2]):
    for name in names:
        if name.endswith(".log"): continue
        data = open(os.path.join(root, name), "rb").read()
        found += any(run in data for run in runs)
print(found)
PYEOF
}
check "the photo's bytes are nowhere in carol's data directory (store, WAL, chunk pack)" 0 "$(photo_in carol)"
mkdir -p "$work/plain" && cp "$work/bob-photo.png" "$work/plain/"
check "the search finds the photo where it is in plain" 1 "$(photo_in plain)"
check "alice's own store keeps only the sealed photo" 0 "$(photo_in alice)"
check "the photo's key is nowhere in carol's data directory" 0 "$(grep -rlaF "$("$LANCHAT" get --data "$work/bob" "/conversations/$cid/messages/$photo_key/photoKey" | tr -d '"')" "$work/carol" | grep -v '\.log$' | wc -l)"

# Live state of the group: Alice's typing flag and read receipt reach Bob through Carol, sealed
# (Protocol.md §11.8); Carol shows neither and keeps no receipt key.
call() { curl -s -X "$2" -H "Authorization: Bearer token-$1" ${4:+--data "$4"} "http://$(api_of "$1")$3"; }
typing_path="/conversations/$cid/typingIndicator/$alice.json"
receipt_path="/conversations/$cid/readReceipts/$alice.json"
receipt_key="-NreceiptOnlyMembersSee"
call alice PUT "$typing_path" true >/dev/null
call alice PUT "$receipt_path" "\"$receipt_key\"" >/dev/null
bob_sees_live() { [ "$(call bob GET "$typing_path")" == true ] && [ "$(call bob GET "$receipt_path")" == "\"$receipt_key\"" ]; }
until_true 10 bob_sees_live; check "bob sees alice typing and her read receipt (sealed, relayed by carol)" 0 $?
check "carol shows no typing flag of the group" null "$(call carol GET "$typing_path")"
check "carol shows no read receipt of the group" null "$(call carol GET "$receipt_path")"
kept_receipt() { "$PY" -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('select count(*) from receipts').fetchone()[0])" "$work/bob/live.sqlite"; }
bob_keeps_receipt() { [ "$(kept_receipt)" == 1 ]; }
until_true 10 bob_keeps_receipt; check "bob's node keeps the receipt (sealed) on disk" 0 $?
check "the receipt's message key is nowhere in bob's data directory in plain" 0 "$(grep -rlaF -e "$receipt_key" "$work/bob" | grep -v '\.log$' | wc -l)"

until_true 30 synced carol; check "carol stores every record" 0 $?
check "carol's tree shows nothing of the group" "null" "$("$LANCHAT" get --data "$work/carol" "/conversations/$cid")"
check "carol's tree shows nothing of the direct conversation" "null" "$("$LANCHAT" get --data "$work/carol" "/conversations/$dm")"
check "carol cannot read the messages" "" "$("$LANCHAT" messages --data "$work/carol" "$cid")"
"$LANCHAT" send --data "$work/carol" "$cid" "let me in" >/dev/null 2>&1
check "carol cannot write there" 1 $?
plaintext_in() { grep -rl -a -e "$secret" -e "roger that" -e "just between us" -e "Operation Owl" -e "$receipt_key" "$work/$1" | grep -v '\.log$' | wc -l; }
check "no plaintext anywhere in carol's data directory (store, WAL, chunks)" 0 "$(plaintext_in carol)"
check "the plaintext is in bob's store (he is a member)" 1 "$([ "$(plaintext_in bob)" -ge 1 ] && echo 1)"

# Independent reader: a member's key decrypts the message from an export stream, carol's does not.
"$LANCHAT" export --data "$work/carol" > "$work/carol.lcx" 2>/dev/null
"$PY" Tools/interop/private_interop.py "$work/carol.lcx" "$work/bob/identity.key" "$secret" > "$work/interop-member.out"
check "PyNaCl reads the message with bob's key" 0 $?
"$PY" Tools/interop/private_interop.py "$work/carol.lcx" "$work/carol/identity.key" "$secret" --outsider > "$work/interop-outsider.out"
check "PyNaCl reads nothing with carol's key" 0 $?

# Bob is removed: he still receives the records, but reads nothing sent after.
"$LANCHAT" group remove --data "$work/alice" -- "$cid" "$bob"
after="sent after the removal"
"$LANCHAT" send --data "$work/alice" "$cid" "$after" >/dev/null
until_true 30 synced bob; check "bob receives the new records" 0 $?
bob_sees_no_live() { [ "$(call bob GET "$typing_path")" == null ] && [ "$(call bob GET "$receipt_path")" == null ]; }
until_true 10 bob_sees_no_live; check "bob, removed, shows neither alice's typing flag nor her receipt" 0 $?
check "bob cannot read what was sent after his removal" 0 "$("$LANCHAT" messages --data "$work/bob" "$cid" | grep -c "$after")"
check "bob still has what he read before" 1 "$("$LANCHAT" messages --data "$work/bob" "$cid" | grep -c "$secret")"
check "the new plaintext is nowhere in bob's data directory" 0 "$(grep -rl -a "$after" "$work/bob" | grep -v '\.log$' | wc -l)"
"$LANCHAT" send --data "$work/bob" "$cid" "still here" >/dev/null 2>&1
check "bob cannot write any more" 1 $?
check "alice sees one member left" 1 "$("$LANCHAT" group members --data "$work/alice" "$cid" | wc -l)"

cat "$work/interop-member.out" "$work/interop-outsider.out"
# Alice adds Bob again; he reads what is sent from then on. Then he leaves: Alice's node makes a
# new key without him at once, and what she sends next he cannot read.
"$LANCHAT" group add --data "$work/alice" -- "$cid" "$bob"
"$LANCHAT" send --data "$work/alice" "$cid" "welcome back" >/dev/null
until_true 30 reads "$cid" "welcome back"; check "bob, added again, reads the new message" 0 $?
check "bob, added again, still cannot read what was sent while he was out" 0 "$("$LANCHAT" messages --data "$work/bob" "$cid" | grep -c "$after")"
"$LANCHAT" group leave --data "$work/bob" "$cid"
keys_of_alice() { "$LANCHAT" export --data "$work/alice" 2>/dev/null | "$PY" -c "
import sys, cbor2, struct
data = sys.stdin.buffer.read()[16:]; n = 0
while True:
    (l,) = struct.unpack('>I', data[:4]); data = data[4:]
    if l == 0: break
    n += cbor2.loads(data[:l])[1] == 5; data = data[l:]
print(n)"; }
rekeyed() { [ "$(keys_of_alice)" -ge 4 ]; }
until_true 30 rekeyed; check "alice's node makes a new key when bob leaves" 0 $?
"$LANCHAT" send --data "$work/alice" "$cid" "after bob left" >/dev/null
until_true 30 synced bob; check "bob receives the records after leaving" 0 $?
check "bob cannot read what is sent after he left" 0 "$("$LANCHAT" messages --data "$work/bob" "$cid" | grep -c "after bob left")"
"$LANCHAT" export --data "$work/alice" > "$work/alice.lcx" 2>/dev/null
"$PY" Tools/interop/private_interop.py "$work/alice.lcx" "$work/bob/identity.key" "after bob left" --cannot-read > "$work/interop-left.out"
check "PyNaCl with bob's key cannot read what was sent after he left" 0 $?
"$PY" Tools/interop/private_interop.py "$work/alice.lcx" "$work/bob/identity.key" "welcome back" > /dev/null
check "PyNaCl with bob's key reads what was sent while he was a member" 0 $?
check "the leaver is no member" 1 "$("$LANCHAT" group members --data "$work/alice" "$cid" | wc -l)"

echo "private conversations: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
