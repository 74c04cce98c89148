#!/usr/bin/env bash
# Real processes on loopback: images made by Pillow (a JPEG, a PNG, an animated GIF) sent as photo
# messages on node 1 arrive byte-identical on nodes 2 and 3; a profile picture set on node 1 is
# read on node 2; refused files get clear errors; a receiver killed (SIGKILL) in the middle of a
# ~20 MiB image and restarted fetches only the chunks it did not have.
# Usage: Tools/images-test.sh [path/to/lanchat]
set -uo pipefail
cd "$(dirname "$0")/.."
LANCHAT=${1:-.build/debug/lanchat}
PY=$(Tools/python-env) || { echo "images: cannot set up Python with Pillow" >&2; exit 1; }
. Tools/harness.sh


# The images, made by an independent encoder.
"$PY" - "$work" <<'EOF' || { echo "images: Pillow could not make the images" >&2; exit 1; }
import os, sys
from PIL import Image
out = sys.argv[1]
w, h = 96, 64
Image.frombytes("RGB", (w, h), bytes((x * 2 + y) % 256 for y in range(h) for x in range(w) for _ in range(3))).save(f"{out}/photo.jpg", quality=90)
Image.frombytes("RGBA", (w, h), bytes((x * 3 + y * c) % 256 for y in range(h) for x in range(w) for c in range(4))).save(f"{out}/photo.png")
frames = [Image.new("P", (w, h), color) for color in (1, 2, 3)]
for f in frames: f.putpalette([0, 0, 0, 255, 0, 0, 0, 255, 0, 0, 0, 255] + [0] * (256 * 3 - 12))
frames[0].save(f"{out}/anim.gif", save_all=True, append_images=frames[1:], duration=100, loop=0)
Image.frombytes("RGB", (w, h), os.urandom(w * h * 3)).save(f"{out}/avatar.png")
# About 20 MiB of noise: PNG cannot compress it.
side = 2640
Image.frombytes("RGB", (side, side), os.urandom(side * side * 3)).save(f"{out}/big.png", compress_level=1)
open(f"{out}/empty.jpg", "wb").close()
open(f"{out}/notes.txt", "w").write("these are notes, not a picture\n")
for name in ("photo.jpg", "photo.png", "anim.gif", "big.png"):
    im = Image.open(f"{out}/{name}")
    assert im.format in ("JPEG", "PNG", "GIF"), name
assert Image.open(f"{out}/anim.gif").n_frames == 3
EOF

# Nodes listen on ports the kernel picks (no clash with anything else on the machine); each
# node's address is read from the node.json it publishes once it runs.
addr=()
start() {  # start N [extra args]
    local n=$1; shift
    rm -f "$work/n$n/node.json"
    "$LANCHAT" run --data "$work/n$n" --listen 127.0.0.1:0 --no-discovery "$@" 2>>"$work/n$n.log" &
    pids[$n]=$!
    until_true 10 test -f "$work/n$n/node.json" || { echo "images: node $n did not start" >&2; tail -5 "$work/n$n.log" >&2; exit 1; }
    addr[$n]=$(grep -o '"listen":"[^"]*"' "$work/n$n/node.json" | cut -d'"' -f4)
}
for n in 1 2 3; do uid[$n]=$("$LANCHAT" init --data "$work/n$n" --name "Node $n"); done
start 1
start 2 --peer "${addr[1]}"
start 3 --peer "${addr[1]}" --peer "${addr[2]}"
connected() { [ "$("$LANCHAT" peers --data "$work/n$1" | grep -c connected)" -ge "$2" ]; }
until_true 20 connected 3 2; check "node 3 connected to both" 0 $?

# Photo messages: seen on the other nodes, and their bytes identical there.
shows() { "$LANCHAT" messages --data "$work/n$1" general | grep -qF "$2"; }
for file in photo.jpg photo.png anim.gif; do
    key=$("$LANCHAT" send-image --data "$work/n1" general "$work/$file" 2>"$work/send.err")
    check "send-image $file" 0 $?
    ext=${file##*.}
    url="gs://lanchat/images/${uid[1]}_$key.$ext"
    for n in 2 3; do
        until_true 20 shows $n "[photo $url]"; check "$file message on node $n" 0 $?
        "$LANCHAT" get-file --data "$work/n$n" "$url" "$work/out$n.$ext" 2>"$work/get.err"
        check "get-file $file on node $n" 0 $?
        cmp -s "$work/$file" "$work/out$n.$ext"; check "$file identical on node $n" 0 $?
    done
done
check "files listing" 3 "$("$LANCHAT" files --data "$work/n2" images/ | grep -c complete)"

# Profile picture.
picture=$("$LANCHAT" set-picture --data "$work/n1" "$work/avatar.png")
check "set-picture path" "images/${uid[1]}_profile_picture.png" "$picture"
has_picture() { "$LANCHAT" get --data "$work/n2" "/users/${uid[1]}/picture" | grep -q profile_picture; }
until_true 20 has_picture; check "picture set seen on node 2" 0 $?
"$LANCHAT" get-picture --data "$work/n2" "${uid[1]}" "$work/avatar2.png" 2>/dev/null; check "get-picture" 0 $?
cmp -s "$work/avatar.png" "$work/avatar2.png"; check "picture identical" 0 $?

# Refused files: clear errors, exit status 1, and no photo message left behind.
before=$("$LANCHAT" messages --data "$work/n1" general | wc -l)
refused() {  # refused NAME EXPECTED_ERROR COMMAND...
    local name=$1 expected=$2; shift 2
    "$@" >/dev/null 2>"$work/err"
    check "$name exit status" 1 $?
    grep -qF "Error: $expected" "$work/err"; check "$name message ($(head -1 "$work/err"))" 0 $?
}
refused "contradicting --type" "the file was declared image/png but its bytes are image/jpeg" \
    "$LANCHAT" send-image --data "$work/n1" general "$work/photo.jpg" --type image/png
refused "empty file" "the file is empty" "$LANCHAT" send-image --data "$work/n1" general "$work/empty.jpg"
refused "not an image" "the bytes are not a JPEG, PNG, GIF or WebP image" "$LANCHAT" send-image --data "$work/n1" general "$work/notes.txt"
refused "not an image as picture" "the bytes are not a JPEG, PNG, GIF or WebP image" "$LANCHAT" set-picture --data "$work/n1" "$work/notes.txt"
check "no message from refused files" "$before" "$("$LANCHAT" messages --data "$work/n1" general | wc -l)"

# Kill a receiver in the middle of a ~20 MiB image; restarted, it fetches only what it lacked.
# A fetch over loopback takes a fraction of a second, too short to catch from here, so the
# sender holds only the first half of the image's chunks for a while: its pack is cut short,
# and it answers that it does not hold the rest. Node 2 fetches that half, waits for the rest,
# and is killed then. The sender gets its whole pack back, and node 2, restarted, must fetch
# only the other half.
kill "${pids[3]}"; wait "${pids[3]}" 2>/dev/null  # two nodes are enough here, and faster
kill "${pids[2]}"; wait "${pids[2]}" 2>/dev/null  # away while the image is stored, so it cannot fetch it yet
chunk_rows() { "$PY" -c 'import sqlite3, sys; print(sqlite3.connect(sys.argv[1], timeout=10).execute("SELECT count(*) FROM packed").fetchone()[0])' "$work/n2/store.chunks.sqlite"; }
rows0=$(chunk_rows)
size=$(stat -c %s "$work/big.png")
total=$(( (size + 65535) / 65536 ))
half=$(( total / 2 ))
pack1=$work/n1/store.chunks.pack
pack_before=$(stat -c %s "$pack1")
key=$("$LANCHAT" send-image --data "$work/n1" general "$work/big.png" 2>/dev/null)
kill "${pids[1]}"; wait "${pids[1]}" 2>/dev/null
cp "$pack1" "$work/pack1.whole"
truncate -s $(( pack_before + half * 65536 + 1000 )) "$pack1"  # the image's chunks were appended last
start 1
start 2 --peer "${addr[1]}"
has_half() { [ "$(chunk_rows)" -ge $(( rows0 + half )) ]; }
until_true 60 has_half; check "transfer under way" 0 $?
kill -9 "${pids[2]}"; wait "${pids[2]}" 2>/dev/null
had=$(( $(chunk_rows) - rows0 ))
echo "images: node 2 killed holding $had of $total chunks" >&2
check "killed in the middle, holding the half it could get" "$half" "$had"
kill "${pids[1]}"; wait "${pids[1]}" 2>/dev/null
cp "$work/pack1.whole" "$pack1"
start 1
start 2 --peer "${addr[1]}"
fetched_line() { grep -q "fetched [0-9]* chunks of images/${uid[1]}_$key.png" "$work/n2.log"; }
until_true 60 fetched_line; check "transfer completed after restart" 0 $?
line=$(grep -o "fetched [0-9]* chunks of images/${uid[1]}_$key.png ([0-9]* were here already)" "$work/n2.log" | tail -1)
echo "images: after restart: $line" >&2
check "fetched only the missing chunks" "fetched $((total - had)) chunks of images/${uid[1]}_$key.png ($had were here already)" "$line"
"$LANCHAT" get-file --data "$work/n2" "images/${uid[1]}_$key.png" "$work/big2.png" 2>/dev/null; check "get-file big image" 0 $?
cmp -s "$work/big.png" "$work/big2.png"; check "big image identical" 0 $?
# Every chunk of node 2, killed in the middle of a transfer, still matches its hash; a byte
# changed in its pack is found.
check "check after kill -9" ok "$("$LANCHAT" check --data "$work/n2" 2>/dev/null)"
"$PY" - "$work/n2/store.chunks.pack" <<'EOF'
import sys
with open(sys.argv[1], 'r+b') as pack:
    pack.seek(1000)
    byte = pack.read(1)
    pack.seek(1000)
    pack.write(bytes([byte[0] ^ 0xFF]))
EOF
"$LANCHAT" check --data "$work/n2" >"$work/check.out" 2>&1; check "check finds a changed chunk" 1 $?
check "check names it" 1 "$(grep -c 'does not match its hash' "$work/check.out")"

if [ "$failed" -gt 0 ]; then for n in 1 2 3; do echo "--- node $n log" >&2; tail -20 "$work/n$n.log" >&2; done; fi
echo "images: $passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
