#!/bin/bash
# md-reshape-online-fault.sh — bad input to a reshape while serving:
#   - a grow while a check runs is refused, naming it, and starts nothing;
#   - a member that fails in the middle of a served reshape (a chunk
#     change; fault:after=N,mode=write, its writes failing from then on)
#     is marked faulty and the reshape goes on degraded, as the kernel's
#     raid5 does, a client writing against a flat reference throughout;
#   - stopped part-way, every kept superblock records the position and
#     the failed member; the next start without it continues the reshape
#     degraded to the end; nothing acknowledged is lost (the array reads as
#     the reference) and mdadm --examine sees the new chunk, no reshape.
. "$(dirname "$0")/reshape-lib.sh"
requires nbdinfo nbdcopy mdadm cmp

for i in 0 1 2 3; do truncate -s 16M "$tmp/m$i"; done
m=("$tmp/m0" "$tmp/m1" "$tmp/m2" "$tmp/m3")
reshape_array --level=5 --chunk=64 -- "${m[@]}"

sock=$tmp/s.sock ctl=$tmp/s.ctl
uri="nbd+unix:///?socket=$sock"
start_server "$sock" --control "$ctl" --sync-speed-max 1M \
    "${m[0]}" "${m[1]}" "fault:after=40,mode=write:${m[2]}" "${m[3]}" 2>"$tmp/serve.log"
"$URAID" check "$ctl" >/dev/null 2>&1 || fail "check through the control socket"
out=$("$URAID" grow --chunk 32 "$ctl" 2>&1) && fail "a grow during a check: $out"
grep -q "a check is running" <<<"$out" || fail "the grow during a check said: $out"
"$URAID" check --stop "$ctl" >/dev/null 2>&1 || fail "check --stop"
mdadm --examine "${m[0]}" | grep -q "Reshape" && fail "a refused grow recorded a reshape"
echo "ok: a grow during a check is refused, nothing recorded"

# The fault member's writes fail after 40 (superblock updates count): the
# client starts after the grow, so that they run out during the reshape.
out=$("$URAID" grow --chunk 32 "$ctl" 2>&1) || fail "grow --chunk through the control socket: $out"
/usr/bin/python3 "$tmp/client.py" "$uri" "$tmp/ref" "$tmp/stop" 23 16 >"$tmp/client.out" 2>"$tmp/client.err" &
client=$!
reshape_detail_until "$ctl" faulty
grep -q "faulty" <<<"$out" || fail "the fault member did not fail: $out"
grep -q "State : .*degraded, reshaping" <<<"$out" || fail "not reshaping degraded: $out"
grep -q "Reshape Status : .*(not moving)" <<<"$out" && fail "the reshape stopped on one failure: $out"
sleep 3 # more client writes, degraded, both sides of the position, and moves of them
touch "$tmp/stop"
wait "$client" || fail "client: $(cat "$tmp/client.err")"
grep -q "Reshape Status" <<<"$("$URAID" detail "$ctl")" || fail "the reshape ended before the stop"
stop_server "$server_pid" || fail "serve did not stop cleanly: $(tail -5 "$tmp/serve.log")"
reshape_examined "Reshape pos'n" "Array State : AA.A" -- "${m[0]}" "${m[1]}" "${m[3]}"
echo "ok: a member failed mid-reshape; it went on degraded under $(cat "$tmp/client.out") writes; stopped, recorded"

start_server "$sock" --control "$ctl" "${m[0]}" "${m[1]}" "${m[3]}" 2>"$tmp/serve2.log"
for _ in $(seq 300); do
    grep -q "Reshape Status" <<<"$("$URAID" detail "$ctl")" || break
    sleep 0.1
done
grep -q "Reshape Status" <<<"$("$URAID" detail "$ctl")" && fail "the continued reshape did not end"
nbdcopy "$uri" - | cmp - "$tmp/ref" || fail "after the continued reshape the array differs from the reference"
stop_server "$server_pid" || fail "serve (continued) did not stop cleanly: $(tail -5 "$tmp/serve2.log")"
e=$(mdadm --examine "${m[0]}")
grep -q "Chunk Size : 32K" <<<"$e" || fail "mdadm: not chunk 32K: $e"
grep -q "Reshape" <<<"$e" && fail "mdadm: still a reshape: $e"
echo "ok: the next start continued it degraded to the end; the array is the reference"
