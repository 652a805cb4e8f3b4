#!/bin/bash
# md-grow-online-raid0-stop.sh — a RAID0 grow while serving (2 -> 3
# devices, `uraid grow -n 3 --add NEW CONTROL`) stopped part-way: the serve
# is stopped (SIGTERM) while the reshape of the raid4 in between moves the
# data under a client's writes, and leaves what the offline path's stop
# leaves (md-level-reshape.sh; the kernel continues that one,
# md-kernel-reshape.sh's u0): mdadm --examine reads a raid4
# under reshape, 3 -> 4 devices, the new member recovering and the parity
# role missing.  `uraid grow --continue` then ends the reshape offline,
# `uraid grow --level 0` takes it back to a raid0 of 3, which mdadm
# --examine shows, and the array reads as the reference (the grown part
# as zeros).
. "$(dirname "$0")/reshape-lib.sh"
requires nbdinfo nbdcopy mdadm cmp

for i in 0 1 2; do truncate -s 8M "$tmp/m$i"; done
m=("$tmp/m0" "$tmp/m1")
reshape_array --level=0 --chunk=64 -- "${m[@]}"
reshape_serve 256K "${m[@]}"
out=$("$URAID" grow -n 3 --add "$tmp/m2" "$ctl" 2>&1) || fail "grow through the control socket: $out"
reshape_detail_until "$ctl" "Reshape Status : [1-9][0-9]*% complete"
grep -q "Reshape Status : [1-9][0-9]*% complete" <<<"$out" || fail "no reshape under way: $out"
touch "$tmp/stop"
wait "$client" || fail "client: $(cat "$tmp/client.err")"
stop_server "$server_pid" || fail "serve did not stop cleanly: $(tail -5 "$tmp/serve.log")"
m+=("$tmp/m2")
reshape_examined "Raid Level : raid4" "Reshape pos'n" "Delta Devices : 1 (3->4)" -- "${m[@]}"
grep -q "Recovery Offset" <<<"$(mdadm --examine "$tmp/m2")" || fail "mdadm: the new member is not recovering"
echo "ok: stopped part-way, the members hold the raid4 reshape mdadm reads"

"$URAID" grow --continue "${m[@]}" >"$tmp/cont.out" 2>&1 || fail "--continue: $(cat "$tmp/cont.out")"
"$URAID" grow --level 0 "${m[@]}" >"$tmp/l0.out" 2>&1 || fail "--level 0: $(cat "$tmp/l0.out")"
reshape_examined "Raid Level : raid0" "Raid Devices : 3" -- "${m[@]}"
head -c $((size / 2)) /dev/zero >>"$tmp/ref"
"$URAID" serve --readonly --run "nbdcopy \"\$uri\" - | head -c $((size / 2 * 3)) | cmp - '$tmp/ref'" \
    "${m[@]}" 2>/dev/null || fail "after --continue and --level 0 the array differs from the reference"
echo "ok: --continue and --level 0 end it offline; mdadm reads a raid0 of 3; the data is the reference"
