#!/bin/bash
# md-reshape-online.sh — a RAID5 reshape (3 -> 4 devices and chunk 16K
# -> 32K at once) started through the control socket of a running `uraid
# serve` (`uraid grow -n 4 --add NEW --chunk 32 CONTROL`), while a client
# writes at random against a flat reference file:
#   - `uraid detail` shows it as mdadm --detail does (Reshape Status,
#     Delta Devices 1, (3->4)), and --json the same numbers;
#   - new connections see the old size while the data moves, the grown
#     size (3/2 of it: 3 data devices instead of 2) once it ended;
#   - after the serve stops, mdadm --examine on every member (the new one
#     too) shows 4 devices, chunk 32K and no reshape, the array reads as the
#     reference (the grown part as zeros, as md writes it), and
#     `uraid check` finds the parity consistent.
# Refused while it runs: a second grow, `uraid add` and `uraid check`.
# Then, each member using less than it holds (`uraid grow --size`
# offline), a chunk and layout change while serving (same size) with no
# room before the data for it but room after: the data offset moves up,
# the reshape runs backwards from the end (detail counts it up from 0%),
# the client writing throughout; mdadm --examine sees the new chunk,
# layout and offset.  With a write-intent bitmap the grow runs too, and
# the bitmap stays (on the new member as well) with the superblock's
# events (mdadm -X).
. "$(dirname "$0")/reshape-lib.sh"
requires nbdinfo nbdcopy mdadm cmp

for i in 0 1 2 3 4; do truncate -s 16M "$tmp/m$i"; done
m=("$tmp/m0" "$tmp/m1" "$tmp/m2")
reshape_array --level=5 --chunk=16 -- "${m[@]}"

reshape_serve 2M "${m[@]}"
"$URAID" monitor --test "$ctl" >"$tmp/mon.json" &
monitor=$!
for _ in $(seq 100); do grep -q TestMessage "$tmp/mon.json" && break; sleep 0.1; done
grep -q TestMessage "$tmp/mon.json" || fail "uraid monitor did not connect"
out=$("$URAID" grow -n 4 --add "$tmp/m3" --chunk 32 "$ctl" 2>&1) ||
    fail "grow through the control socket: $out"
grep -q "reshaping 3 -> 4 devices, new chunk" <<<"$out" || fail "grow said: $out"
out=$("$URAID" detail "$ctl") || fail "detail"
grep -q "Reshape Status : [0-9]*% complete" <<<"$out" || fail "detail shows no reshape: $out"
grep -q "Delta Devices : 1, (3->4)" <<<"$out" || fail "detail: no delta: $out"
grep -q "State : .*reshaping" <<<"$out" || fail "detail: state: $out"
grep -q "New Chunksize : 32K" <<<"$out" || fail "detail: no new chunk: $out"
"$URAID" detail --json "$ctl" | /usr/bin/python3 -c '
import json, sys
a = json.load(sys.stdin)["arrays"][0]; r = a["reshape"]
assert r["from_devices"] == 3 and r["to_devices"] == 4 and r["delta_devices"] == 1, r
assert r["new_size"] * 2 == r["old_size"] * 3 == a["array_size"] * 3, r
assert 0 <= r["done"] <= r["total"], r' || fail "detail --json: the reshape's numbers"
[ "$(nbdinfo --size "$uri")" = "$size" ] || fail "a new connection during the reshape: not the old size"
out=$("$URAID" grow -n 5 --add "$tmp/m4" "$ctl" 2>&1) && fail "a second grow: $out"
grep -q "a reshape is under way already" <<<"$out" || fail "second grow said: $out"
out=$("$URAID" add "$ctl" "$tmp/m4" 2>&1) && fail "add during a reshape: $out"
grep -q "a reshape is under way" <<<"$out" || fail "add during a reshape said: $out"
out=$("$URAID" check "$ctl" 2>&1) && fail "check during a reshape: $out"
grep -q "a reshape is under way" <<<"$out" || fail "check during a reshape said: $out"
echo "ok: started while serving; detail shows it; the refusals"

reshape_end "$ctl" "the reshape" $((size / 2 * 3))
wait "$monitor" 2>/dev/null || true
ev=$(sed -n 's/.*"event": *"\([A-Za-z0-9]*\)".*/\1/p' "$tmp/mon.json" | tr '\n' ' ')
grep -q "RebuildStarted .*Rebuild20 .*RebuildFinished" <<<"$ev" ||
    fail "uraid monitor: no RebuildStarted, Rebuild20 ... RebuildFinished for the reshape: $ev"
echo "ok: the reshape ended under $(cat "$tmp/client.out") client writes; new connections get the grown size"

all=("${m[@]}" "$tmp/m3")
reshape_examined "Raid Devices : 4" "Chunk Size : 32K" '!Reshape\|Delta' "State : clean" -- "${all[@]}"
head -c $((size / 2)) /dev/zero >>"$tmp/ref"
"$URAID" serve --readonly --run "nbdcopy \"\$uri\" - | cmp - '$tmp/ref'" "${all[@]}" 2>/dev/null ||
    fail "the array differs from the reference"
"$URAID" check "${all[@]}" >"$tmp/check.out" 2>&1 || fail "check: $(cat "$tmp/check.out")"
grep -q "agree" "$tmp/check.out" || fail "check said: $(cat "$tmp/check.out")"
echo "ok: mdadm sees 4 devices, chunk 32K and no reshape; the array is the reference; its parity agrees"

# Each member using 4 MiB less than its data area holds: room after the
# data, too little before it (what the first reshape left) for a move by
# half of it; same size, so the array keeps its bytes and size.
"$URAID" grow --size 11M "${all[@]}" >/dev/null 2>&1 || fail "grow --size 11M"
size=$((11 * 1024 * 1024 * 3))
[ "$("$URAID" serve --readonly --run 'nbdinfo --size "$uri"' "${all[@]}" 2>/dev/null)" = "$size" ] ||
    fail "not $size bytes after --size 11M"
truncate -s "$size" "$tmp/ref"
off0=$(mdadm --examine "${all[0]}" | sed -n 's/.*Data Offset : \([0-9]*\) sectors/\1/p')
reshape_serve 2M "${all[@]}"
out=$("$URAID" grow --chunk 64 --layout right-symmetric "$ctl" 2>&1) ||
    fail "chunk and layout through the control socket: $out"
grep -q "reshaping 4 -> 4 devices, new chunk, new layout" <<<"$out" || fail "grow said: $out"
out=$("$URAID" detail "$ctl") || fail "detail"
grep -q "New Layout : right-symmetric" <<<"$out" || fail "detail: no new layout: $out"
grep -q "New Chunksize : 64K" <<<"$out" || fail "detail: no new chunk: $out"
"$URAID" detail --json "$ctl" | /usr/bin/python3 -c '
import json, sys
r = json.load(sys.stdin)["arrays"][0]["reshape"]
assert r["backwards"] and r["delta_devices"] == 0, r
assert 0 <= r["done"] < r["total"] and r["percent"] < 100, r' ||
    fail "detail --json: not a backwards reshape counted up from 0"
reshape_wait_end "$ctl" "the chunk change"
touch "$tmp/stop"
wait "$client" || fail "client: $(cat "$tmp/client.err")"
[ "$(nbdinfo --size "$uri")" = "$size" ] || fail "the chunk change changed the size"
stop_server "$server_pid" || fail "serve did not stop cleanly: $(tail -5 "$tmp/serve.log")"
reshape_examined "Chunk Size : 64K" "Layout : right-symmetric" '!Reshape\|Delta\|New Offset' -- "${all[@]}"
for f in "${all[@]}"; do
    off=$(mdadm --examine "$f" | sed -n 's/.*Data Offset : \([0-9]*\) sectors/\1/p')
    [ "$off" -gt "$off0" ] || fail "mdadm: $f: data offset $off, not above $off0"
done
"$URAID" serve --readonly --run "nbdcopy \"\$uri\" - | cmp - '$tmp/ref'" "${all[@]}" 2>/dev/null ||
    fail "after the chunk change the array differs from the reference"
"$URAID" check "${all[@]}" >"$tmp/check.out" 2>&1 || fail "check: $(cat "$tmp/check.out")"
echo "ok: chunk 32K -> 64K and a new layout while serving, backwards (data offset $off0 -> $off) under $(cat "$tmp/client.out") writes"

for i in 0 1 2 3; do truncate -s 8M "$tmp/b$i"; done
b=("$tmp/b0" "$tmp/b1" "$tmp/b2")
"$URAID" create --level=5 --bitmap=internal "${b[@]}" >/dev/null 2>&1 || fail "create with a bitmap"
start_server "$tmp/b.sock" --control "$tmp/b.ctl" "${b[@]}" 2>"$tmp/b.log"
out=$("$URAID" grow -n 4 --add "$tmp/b3" "$tmp/b.ctl" 2>&1) || fail "grow with a bitmap: $out"
for _ in $(seq 600); do
    "$URAID" detail "$tmp/b.ctl" | grep -q "Reshape Status" || break
    sleep 0.1
done
stop_server "$server_pid" || fail "serve (bitmap) did not stop cleanly"
b+=("$tmp/b3")
for f in "${b[@]}"; do
    ev=$(mdadm --examine "$f" | sed -n 's/^ *Events : //p')
    dd if="$f" of="$tmp/bm.img" bs=512 skip=16 count=8 2>/dev/null
    x=$(mdadm -X "$tmp/bm.img" 2>&1)
    [ "$(sed -n 's/^ *Events : //p' <<<"$x")" = "$ev" ] || fail "bitmap on $f after the grow: $x"
    grep -q " 0 dirty" <<<"$x" || fail "bitmap on $f dirty after a clean stop: $x"
done
"$URAID" check "${b[@]}" >"$tmp/check.out" 2>&1 || fail "check (bitmap): $(cat "$tmp/check.out")"
grep -q "agree" "$tmp/check.out" || fail "check (bitmap) said: $(cat "$tmp/check.out")"
echo "ok: with a bitmap: grown while serving, the bitmap kept on every member, events equal"
