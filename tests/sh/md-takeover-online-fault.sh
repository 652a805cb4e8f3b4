#!/bin/bash
# md-takeover-online-fault.sh — a member that fails at the flush a level
# change while serving makes first (fault:mode=write,after=0: its first
# write op, the flush, fails with EIO): the failure is recorded (the
# array's lock is not held across that flush, which the failure's record
# takes) and the change is refused, the level as it was; tried again it is
# refused naming the faulty member; the serve goes on and stops cleanly.
. "$(dirname "$0")/nbd-lib.sh"
requires timeout

truncate -s 8M "$tmp/m0" "$tmp/m1"
"$URAID" create --level=1 "$tmp/m0" "$tmp/m1" >/dev/null 2>&1 || fail "create"
sock=$tmp/s.sock ctl=$tmp/s.ctl
start_server "$sock" --control "$ctl" "$tmp/m0" "fault:mode=write,after=0:$tmp/m1" 2>"$tmp/serve.log"
out=$(timeout 30 "$URAID" grow --level 5 "$ctl" 2>&1) && fail "--level 5 with a member failing: $out"
grep -q "its state changed meanwhile" <<<"$out" || fail "--level 5 said: $out"
out=$(timeout 30 "$URAID" grow --level 5 "$ctl" 2>&1) && fail "--level 5 again: $out"
grep -q "a member is faulty" <<<"$out" || fail "--level 5 again said: $out"
out=$("$URAID" detail "$ctl") || fail "detail"
grep -q "Raid Level : raid1" <<<"$out" || fail "the level changed: $out"
grep -q "Failed Devices : 1" <<<"$out" || fail "the failure is not recorded: $out"
stop_server "$server_pid" || fail "serve did not stop cleanly: $(tail -5 "$tmp/serve.log")"
echo "ok: a member failing at the level change's flush: recorded, the change refused, raid1 served on"
