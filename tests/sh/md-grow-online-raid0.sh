#!/bin/bash
# md-grow-online-raid0.sh — a RAID0 grow, 3 -> 4 devices, started through
# the control socket of a running `uraid serve` (`uraid grow -n 4 --add NEW
# CONTROL`), while a client writes at random against a flat reference
# file: md has no raid0 reshape, so the serve takes the array over to a
# raid4 with its parity missing, reshapes that beside the
# client (the new member rebuilt in the old parity's role as the reshape
# passes) and takes it back to raid0, as the offline path (md-level-reshape.sh)
# and mdadm do.  During it `uraid detail` shows the raid4
# reshape (3+1 -> 4+1 devices); after it the raid0 of 4, and new connections
# get 4/3 of the size; after the serve stops mdadm --examine on every member
# (the new one too) shows a raid0 of 4 and no reshape, and the array reads
# as the reference (the grown part as zeros).  Refused first, the raid0
# left as it was: a device count the NEWs given do not make.
. "$(dirname "$0")/reshape-lib.sh"
requires nbdinfo nbdcopy mdadm cmp

for i in 0 1 2 3; do truncate -s 16M "$tmp/m$i"; done
m=("$tmp/m0" "$tmp/m1" "$tmp/m2")
reshape_array --level=0 --chunk=64 -- "${m[@]}"
reshape_serve 2M "${m[@]}"
out=$("$URAID" grow -n 5 --add "$tmp/m3" "$ctl" 2>&1) && fail "-n 5 with one NEW: $out"
grep -q "3 -> 5 devices takes 2 new members" <<<"$out" || fail "-n 5 with one NEW said: $out"
"$URAID" detail "$ctl" | grep -q "Raid Level : raid0" || fail "a refused grow changed the level"
out=$("$URAID" grow -n 4 --add "$tmp/m3" "$ctl" 2>&1) || fail "grow through the control socket: $out"
grep -q "raid0 3 -> 4 devices while serving" <<<"$out" || fail "grow said: $out"
out=$("$URAID" detail "$ctl") || fail "detail"
grep -q "Raid Level : raid4" <<<"$out" || fail "detail: not the raid4 in between: $out"
grep -q "Reshape Status : [0-9]*% complete" <<<"$out" || fail "detail shows no reshape: $out"
grep -q "Delta Devices : 1, (4->5)" <<<"$out" || fail "detail: no delta: $out"
[ "$(nbdinfo --size "$uri")" = "$size" ] || fail "a new connection during the reshape: not the old size"
echo "ok: a raid0 grow started while serving; detail shows the raid4 reshape"

reshape_wait_end "$ctl" "the raid0 grow's reshape"
reshape_detail_until "$ctl" "Raid Level : raid0" # then the takeover back to raid0
grep -q "Raid Level : raid0" <<<"$out" || fail "not raid0 again after the reshape: $out"
grep -q "Raid Devices : 4" <<<"$out" || fail "detail after: not 4 devices: $out"
reshape_stop "the raid0 grow" $((size / 3 * 4))
m+=("$tmp/m3")
reshape_examined "Raid Level : raid0" "Raid Devices : 4" '!Reshape\|Delta\|New Offset' -- "${m[@]}"
head -c $((size / 3)) /dev/zero >>"$tmp/ref"
"$URAID" serve --readonly --run "nbdcopy \"\$uri\" - | head -c $((size / 3 * 4)) | cmp - '$tmp/ref'" \
    "${m[@]}" 2>/dev/null || fail "after the grow the array differs from the reference"
echo "ok: raid0 3 -> 4 devices while serving under $(cat "$tmp/client.out") client writes; mdadm agrees, and the data"
