#!/bin/bash
# raid-parity.sh — RAID5 and RAID6 through NBD with a real client: fio
# writes random blocks of mixed sizes from several jobs at once (so writes
# meet on stripes) with crc32c verification; the array, served again with
# members left out (one for RAID5, two for RAID6), must verify the same
# data rebuilt from parity, take new writes degraded and verify them too;
# and with every member back, the stale ones are ignored by events and the
# data still verifies.
. "$(dirname "$0")/nbd-lib.sh"
requires fio
fio --enghelp=nbd >/dev/null 2>&1 || { echo "SKIP: fio lacks ioengine=nbd"; exit 77; }

run_fio() { # NAME ARGS...
    local name=$1; shift
    (cd "$tmp" && fio --name="$name" --ioengine=nbd --uri="nbd+unix:///?socket=$tmp/s.sock" \
        --size=8M --offset_increment=8M --verify=crc32c --verify_fatal=1 \
        --randrepeat=1 --output="$tmp/$name.out" "$@") \
        || { cat "$tmp/$name.out" >&2; fail "fio $name"; }
    grep -q "err= 0" "$tmp/$name.out" || { cat "$tmp/$name.out" >&2; fail "fio $name errors"; }
}

for geometry in "5 4 1 --chunk=16" "6 5 2 --layout=right-asymmetric --chunk=8"; do
    read -r level disks gone opts <<<"$geometry"
    files=()
    for i in $(seq "$disks"); do truncate -s 24M "$tmp/p$level.$i"; files+=("$tmp/p$level.$i"); done
    # shellcheck disable=SC2086
    "$URAID" create --level="$level" $opts "${files[@]}" >/dev/null 2>&1 || fail "create raid$level"

    start_server "$tmp/s.sock" "${files[@]}" 2>/dev/null
    run_fio w$level --rw=randwrite --bsrange=512-64k --iodepth=8 --numjobs=3 --do_verify=1
    stop_server "$server_pid"

    # Degraded: the last members gone; what was written reads back.
    left=("${files[@]:0:$((disks - gone))}")
    start_server "$tmp/s.sock" --degraded "${left[@]}" 2>/dev/null
    run_fio w$level --rw=randwrite --bsrange=512-64k --iodepth=8 --numjobs=3 --verify_only
    run_fio d$level --rw=randwrite --bsrange=4k-128k --iodepth=4 --numjobs=3 --do_verify=1
    stop_server "$server_pid"

    # All back: the left-out members are stale (fewer events) and stay
    # out; the degraded writes read back.
    start_server "$tmp/s.sock" --degraded "${files[@]}" 2>"$tmp/back$level.log"
    run_fio d$level --rw=randwrite --bsrange=4k-128k --iodepth=4 --numjobs=3 --verify_only
    stop_server "$server_pid"
done
echo PASS
