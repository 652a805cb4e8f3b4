#!/bin/bash
# md-scrub.sh — checking and repairing an array while it serves (md's
# sync_action "check" / "repair"), through the control socket:
#   RAID1 x2, RAID10 x4 and RAID5 x3, each with one 4 KiB block of one
#   member overwritten behind the array's back: `uraid check --wait
#   CONTROL` reports it (exit 1; detail's last check and its JSON
#   mismatch_cnt say the same) and changes nothing; `uraid check --repair
#   --wait` while a client rewrites the whole array makes the copies agree,
#   and a check after it finds nothing; after the server stops, the offline
#   check agrees, the client's data reads back and mdadm sees one events
#   count on every member.
#   On slow members: a check shows its progress in `uraid detail`, a
#   second request is refused while it runs, and `--stop` interrupts it.
#   Speed limits (their decisions are test_md_throttle's; no time is
#   measured here): at --sync-speed-max 1K a check and an online rebuild
#   are held part-way (the check stops when told; the rebuild goes on, and
#   ends, under a server without limits); at --sync-speed-min 1K a check is
#   not held with no client, held while one reads, and let go once it
#   has left.
#   Refusals with clear errors: a repair on a read-only serve (a check is
#   allowed there, and writes nothing), an array without redundancy, a
#   degraded one.
. "$(dirname "$0")/md-lib.sh"
requires nbdcopy nbdinfo mdadm cmp md5sum python3 fio

SIZE=20M

ctl() { echo "$tmp/$1.ctl"; }

# jlast NAME PYEXPR: a value of the array's entry in `uraid detail --json`
jarr() {
    "$URAID" detail --json "$(ctl "$1")" > "$tmp/j" || fail "$1: detail --json"
    python3 -c "import json,sys; a=json.load(open(sys.argv[1]))['arrays'][0]; print($2)" "$tmp/j"
}

# plant NAME FILE: overwrite 4 KiB of FILE's data area, 1 MiB in
plant() {
    local off
    off=$(field "$2" "Data Offset")
    [ -n "$off" ] || fail "$1: no data offset on $2"
    head -c 4096 /dev/urandom | dd of="$2" bs=4096 seek=$((off / 8 + 256)) conv=notrunc status=none
}

run() {
    local name=$1 level=$2 disks=$3 out rc uri
    shift 3
    make_array "$name" "$level" "$disks" "$@"
    plant "$name" "${files[1]}"
    uri="nbd+unix:///?socket=$tmp/$name.sock"
    start_server "$tmp/$name.sock" --control "$(ctl "$name")" "${files[@]}" 2> "$tmp/$name.log"

    # the check finds the block, and changes nothing
    md5sum "${files[@]}" > "$tmp/sums"
    rc=0
    out=$("$URAID" check --wait "$(ctl "$name")" 2>&1) || rc=$?
    [ "$rc" = 1 ] || fail "$name: check exit $rc: $out"
    grep -q "check completed: [0-9]* bytes in 1 ranges differ" <<<"$out" || fail "$name: check: $out"
    md5sum --quiet -c "$tmp/sums" || fail "$name: the check changed a member"
    [ "$(jarr "$name" "a['last_check']['status'], a['last_check']['ranges'], 'check' in a")" = \
        "completed 1 False" ] || fail "$name: last_check: $(cat "$tmp/j")"
    if [ "$level" != 5 ]; then
        [ "$(jarr "$name" "a['last_check']['mismatch_cnt']")" = 8 ] ||
            fail "$name: mismatch_cnt: $(cat "$tmp/j")"
    fi
    "$URAID" detail "$(ctl "$name")" | grep -q "Last Check : check completed, [1-9][0-9]* bytes differ" ||
        fail "$name: detail: $("$URAID" detail "$(ctl "$name")")"

    # a repair beside a client rewriting everything; then nothing differs
    head -c "$(stat -c %s "$tmp/$name.data")" /dev/urandom > "$tmp/$name.new"
    nbdcopy "$tmp/$name.new" "$uri" & local copier=$!
    out=$("$URAID" check --repair --wait "$(ctl "$name")" 2>&1) || fail "$name: repair: $out"
    grep -q "repair completed" <<<"$out" || fail "$name: repair: $out"
    wait $copier || fail "$name: client write beside the repair"
    out=$("$URAID" check --wait "$(ctl "$name")" 2>&1) || fail "$name: check after repair: $out"
    grep -q "check completed: the copies agree" <<<"$out" || fail "$name: after repair: $out"
    stop_server "$server_pid" || fail "$name: stop: $(cat "$tmp/$name.log")"
    grep -q "check done" "$tmp/$name.log" || fail "$name: the log does not say: $(cat "$tmp/$name.log")"

    verify "$name" "$tmp/$name.new" "${files[@]}"
    echo "ok: $name: check and repair while serving"
}

run r1 1 2
run r10 10 4 --chunk 64K
run r5 5 3 --chunk 64K

# On slow members: progress, one at a time, --stop.
make_array slow 1 2
start_server "$tmp/slow.sock" --control "$(ctl slow)" "sim:10M:${files[0]}" "sim:10M:${files[1]}" \
    2> "$tmp/slow.log"
out=$("$URAID" check "$(ctl slow)" 2>&1) || fail "slow: check: $out"
grep -q "check started while serving" <<<"$out" || fail "slow: $out"
for _ in $(seq 100); do
    out=$("$URAID" detail "$(ctl slow)")
    grep -q "Check Status : check [0-9.]*% complete" <<<"$out" && break
    sleep 0.05
done
grep -q "Check Status : check [0-9.]*% complete" <<<"$out" || fail "slow: no progress: $out"
out=$("$URAID" check --repair "$(ctl slow)" 2>&1) && fail "slow: a second check was accepted: $out"
grep -q "running already" <<<"$out" || fail "slow: second check: $out"
out=$("$URAID" check --stop "$(ctl slow)" 2>&1) || fail "slow: stop: $out"
for _ in $(seq 100); do
    [ "$(jarr slow "'check' in a")" = False ] && break
    sleep 0.05
done
[ "$(jarr slow "a['last_check']['status']")" = interrupted ] || fail "slow: not interrupted: $(cat "$tmp/j")"
stop_server "$server_pid" || fail "slow: stop"
echo "ok: slow: progress, one at a time, stop"

# Speed limits (md's speed_limit_max / _min).  What the throttle decides
# is test_md_throttle's, on a fake clock; here, that serve hands it the
# limits and its clients, with no clock read: at 1 KiB/s a sync of 31 MiB
# takes hours, so one that has begun and is not done is being held.
SIZE=32M
# held NAME WHAT: WHAT (check, recovery) has done some, and not all, of it
held() {
    local _
    for _ in $(seq 400); do
        [ "$(jarr "$1" "'$2' in a and a['$2']['done'] > 0")" = True ] && break
        sleep 0.05
    done
    [ "$(jarr "$1" "'$2' in a and 0 < a['$2']['done'] < a['$2']['total']")" = True ] ||
        fail "$1: the $2 is not held by the speed limit: $(cat "$tmp/j")"
}
# gone NAME PYEXPR: wait until PYEXPR is false of the array
gone() {
    local _
    for _ in $(seq 1200); do
        [ "$(jarr "$1" "$2")" = False ] && return 0
        sleep 0.05
    done
    fail "$1: still $2: $(cat "$tmp/j")"
}
make_array lim 1 2
start_server "$tmp/lim.sock" --control "$(ctl lim)" --sync-speed-max 1K "${files[@]}" 2> "$tmp/lim.log"
"$URAID" check "$(ctl lim)" > /dev/null || fail "lim: check"
held lim check
"$URAID" check --stop "$(ctl lim)" > /dev/null || fail "lim: check --stop"
gone lim "'check' in a"
[ "$(jarr lim "a['last_check']['status']")" = interrupted ] || fail "lim: check: $(cat "$tmp/j")"
"$URAID" fail "$(ctl lim)" "${files[1]}" > /dev/null || fail "lim: fail"
"$URAID" remove "$(ctl lim)" "${files[1]}" > /dev/null || fail "lim: remove"
rm "${files[1]}"
truncate -s $SIZE "${files[1]}"
"$URAID" add "$(ctl lim)" "${files[1]}" > /dev/null || fail "lim: add"
held lim recovery
stop_server "$server_pid" || fail "lim: stop while rebuilding: $(cat "$tmp/lim.log")"
# without limits the rebuild goes on, and ends
start_server "$tmp/lim.sock" --control "$(ctl lim)" "${files[@]}" 2> "$tmp/lim.log"
gone lim "a['recovering'] or a['degraded']"
stop_server "$server_pid" || fail "lim: stop"
verify lim "$tmp/lim.data" "${files[@]}"

# --sync-speed-min: with no client a check runs at no limit, and ends;
# while a client reads (a request at least every half second) it is held,
# and once the client has gone it ends.
start_server "$tmp/lim.sock" --control "$(ctl lim)" --sync-speed-min 1K "${files[@]}" 2> "$tmp/lim.log"
out=$("$URAID" check --wait "$(ctl lim)" 2>&1) || fail "lim: check, no client: $out"
grep -q "the copies agree" <<<"$out" || fail "lim: check, no client: $out"
if /usr/bin/python3 -c 'import nbd' 2>/dev/null; then
    /usr/bin/python3 - "nbd+unix:///?socket=$tmp/lim.sock" "$tmp/busy.up" <<'PY' & busy=$!
import nbd, sys
h = nbd.NBD()
h.connect_uri(sys.argv[1])
h.pread(4096, 0)
open(sys.argv[2], "w").close()
while True:
    h.pread(4096, 0)
PY
    cleanup_hooks+=("kill $busy 2>/dev/null")
    for _ in $(seq 400); do [ -e "$tmp/busy.up" ] && break; sleep 0.05; done
    [ -e "$tmp/busy.up" ] || fail "lim: the reading client did not start"
    "$URAID" check "$(ctl lim)" > /dev/null || fail "lim: check beside a client"
    held lim check
    kill $busy; wait $busy 2>/dev/null || true
    gone lim "'check' in a" # no client: no limit (held, it would take hours)
    [ "$(jarr lim "a['last_check']['status']")" = completed ] || fail "lim: check: $(cat "$tmp/j")"
else
    echo "note: python3-libnbd missing: --sync-speed-min beside a client not checked"
fi
stop_server "$server_pid" || fail "lim: stop"
out=$("$URAID" serve --sync-speed-min 2M --sync-speed-max 1M --socket "$tmp/x.sock" "${files[@]}" 2>&1) &&
    fail "lim: min above max accepted"
grep -q "above" <<<"$out" || fail "lim: min above max: $out"
echo "ok: speed limits"
SIZE=20M

# Refusals.
make_array ro 1 2
md5sum "${files[@]}" > "$tmp/sums"
start_server "$tmp/ro.sock" --readonly --control "$(ctl ro)" "${files[@]}" 2> "$tmp/ro.log"
out=$("$URAID" check --repair "$(ctl ro)" 2>&1) && fail "ro: repair accepted: $out"
grep -q "read-only" <<<"$out" || fail "ro: repair: $out"
out=$("$URAID" check --wait "$(ctl ro)" 2>&1) || fail "ro: check: $out"
grep -q "the copies agree" <<<"$out" || fail "ro: check: $out"
stop_server "$server_pid" || fail "ro: stop"
md5sum --quiet -c "$tmp/sums" || fail "ro: a read-only serve's check changed a member"

make_array r0 0 2 --chunk 64K
start_server "$tmp/r0.sock" --control "$(ctl r0)" "${files[@]}" 2> "$tmp/r0.log"
out=$("$URAID" check "$(ctl r0)" 2>&1) && fail "r0: check accepted: $out"
grep -q "keeps copies or parity" <<<"$out" || fail "r0: $out"
stop_server "$server_pid" || fail "r0: stop"

make_array dg 1 2
start_server "$tmp/dg.sock" --control "$(ctl dg)" "${files[@]}" 2> "$tmp/dg.log"
"$URAID" fail "$(ctl dg)" "${files[1]}" > /dev/null || fail "dg: fail"
out=$("$URAID" check "$(ctl dg)" 2>&1) && fail "dg: check of a degraded array accepted: $out"
grep -q "degraded" <<<"$out" || fail "dg: $out"
stop_server "$server_pid" || fail "dg: stop"
echo "ok: refusals"
