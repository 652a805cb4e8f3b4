#!/bin/bash
# md-events.sh — md events as mdadm --monitor names them, from `uraid
# serve --program` (CMD EVENT DEVICE [COMPONENT], one run per event) and
# `uraid monitor` (JSON lines from the control socket):
#   a RAID1 whose second member (fault:after=N) fails under a client's
#   writes: Fail (that member) and DegradedArray, each exactly once however
#   many writes fail on it; a spare added through the control socket:
#   RebuildStarted, Rebuild20 ... Rebuild80, RebuildFinished, SpareActive
#   (the spare), in that order; the monitor sees the same sequence; serve
#   --test and monitor --test send TestMessage; a check that finds a
#   planted difference ends with RebuildFinished " mismatches found: 8 (on
#   raid level 1)", md's mismatch_cnt in sectors, as mdadm passes it; a
#   monitor client that never reads holds up neither the array nor the exit.
. "$(dirname "$0")/md-lib.sh"
requires nbdcopy nbdinfo python3

SIZE=20M
ctl=$tmp/e.ctl
log=$tmp/events.log
cat > "$tmp/prog.sh" <<EOS
#!/bin/sh
# one line an event: its arguments, each ended by |
printf '%s|' "\$@" >> "$log"
echo >> "$log"
EOS
chmod +x "$tmp/prog.sh"

# wait_for PATTERN FILE: until a line of FILE matches (30 s at most)
wait_for() {
    for _ in $(seq 300); do grep -q -- "$1" "$2" 2>/dev/null && return 0; sleep 0.1; done
    fail "no '$1' in $2: $(cat "$2" 2>/dev/null)"
}

make_array e 1 2
truncate -s "$SIZE" "$tmp/spare"
uri="nbd+unix:///?socket=$tmp/e.sock"
victim="fault:after=40:$tmp/e.1"
start_server "$tmp/e.sock" --control "$ctl" --program "$tmp/prog.sh" --test \
    "$tmp/e.0" "$victim" 2> "$tmp/serve.log"
# a monitor, --test: its TestMessage first (to the program too)
"$URAID" monitor --test "$ctl" > "$tmp/mon.json" &
mon=$!
server_pids+=("$mon")
wait_for '"TestMessage"' "$tmp/mon.json"

# a monitor client that never reads: it holds up nobody, not even the exit
python3 -c 'import socket, sys, time
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
s.sendall(b"{\"op\":\"monitor\"}\n"); time.sleep(120)' "$ctl" &
server_pids+=("$!")

# the member fails under writes, many of which would fail on it
for p in 1 2 3; do
    head -c 8M /dev/urandom > "$tmp/d"
    nbdcopy "$tmp/d" "$uri" || fail "write $p"
done
wait_for '^DegradedArray|' "$log"
[ "$(grep -c '^Fail|' "$log")" = 1 ] || fail "Fail not exactly once: $(cat "$log")"
[ "$(grep -c '^DegradedArray|' "$log")" = 1 ] || fail "DegradedArray not exactly once: $(cat "$log")"
name=$(sed -n 's/^Fail|\([^|]*\)|.*/\1/p' "$log")
case $name in md/*) ;; *) fail "Fail names device '$name'" ;; esac
grep -qx "Fail|$name|fault:$tmp/e.1|" "$log" || fail "Fail's arguments: $(cat "$log")"
grep -qx "DegradedArray|$name|" "$log" || fail "DegradedArray's arguments: $(cat "$log")"

# a spare: the rebuild's events in order, then the spare is active
"$URAID" add "$ctl" "$tmp/spare" > /dev/null || fail "add"
wait_for '^SpareActive|' "$log"
"$URAID" fail "$ctl" "$victim" > /dev/null 2>&1 || true # already faulty: no new event
wait_for '"SpareActive"' "$tmp/mon.json"
kill "$mon"
wait "$mon" 2>/dev/null || true
stop_server "$server_pid" || fail "server exit"

want="NewArray|$name|
TestMessage|$name|
TestMessage|$name|
Fail|$name|fault:$tmp/e.1|
DegradedArray|$name|
RebuildStarted|$name|
Rebuild20|$name|
Rebuild40|$name|
Rebuild60|$name|
Rebuild80|$name|
RebuildFinished|$name|
SpareActive|$name|$tmp/spare|
DeviceDisappeared|$name|"
[ "$(cat "$log")" = "$want" ] || fail "--program saw:
$(cat "$log")
wanted:
$want"

# the monitor, from when it connected: the same events, as JSON
python3 - "$tmp/mon.json" "$name" "$tmp/e.1" "$tmp/spare" <<'EOF2' || fail "monitor: $(cat "$tmp/mon.json")"
import json, sys
evs = [json.loads(l) for l in open(sys.argv[1])]
name, victim, spare = sys.argv[2:5]
got = [(e["event"], e.get("member")) for e in evs]
want = [("TestMessage", None), ("Fail", "fault:" + victim), ("DegradedArray", None),
        ("RebuildStarted", None), ("Rebuild20", None), ("Rebuild40", None),
        ("Rebuild60", None), ("Rebuild80", None), ("RebuildFinished", None),
        ("SpareActive", spare)]
assert got == want, got
assert all(e["device"] == name and e["time"] > 1e9 for e in evs), evs
assert [e["seq"] for e in evs] == sorted(e["seq"] for e in evs), evs
EOF2

# a check that finds 4 KiB planted on one copy: RebuildFinished with the
# mismatches as mdadm words them
off=$(field "$tmp/spare" "Data Offset")
[ -n "$off" ] || fail "no data offset on the spare"
head -c 4096 /dev/urandom | dd of="$tmp/spare" bs=4096 seek=$((off / 8 + 256)) conv=notrunc status=none
: > "$log"
start_server "$tmp/e.sock" --control "$ctl" --program "$tmp/prog.sh" "$tmp/e.0" "$tmp/spare" \
    2> "$tmp/serve2.log"
"$URAID" check --wait "$ctl" > /dev/null 2>&1 || true
wait_for '^RebuildFinished|' "$log"
stop_server "$server_pid" || fail "server exit"
grep -qx "RebuildStarted|$name|" "$log" || fail "check: no RebuildStarted: $(cat "$log")"
grep -qx "RebuildFinished|$name| mismatches found: 8 (on raid level 1)|" "$log" ||
    fail "check: $(cat "$log")"
grep -q "^DegradedArray" "$log" && fail "a whole array said DegradedArray: $(cat "$log")"
echo "ok: Fail and DegradedArray once, the rebuild's events in order, monitor and --test, check mismatches"
