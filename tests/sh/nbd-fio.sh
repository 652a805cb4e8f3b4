#!/bin/bash
# nbd-fio.sh — fio's own NBD engine with crc32c verification against
# `uraid serve`: sequential and random writes then verifying reads, several
# jobs at once, each job on its own connection (multi-conn), on mem: and
# on a file member.
. "$(dirname "$0")/nbd-lib.sh"
requires fio
fio --enghelp=nbd >/dev/null 2>&1 || { echo "SKIP: fio lacks ioengine=nbd"; exit 77; }

run_fio() { # URI NAME ARGS...
    local uri=$1 name=$2; shift 2
    # fio leaves verify state files in its working directory: keep them in $tmp.
    (cd "$tmp" && fio --name="$name" --ioengine=nbd --uri="$uri" --size=16M --offset_increment=16M \
        --verify=crc32c --verify_fatal=1 --do_verify=1 --output="$tmp/$name.out" "$@") \
        || { cat "$tmp/$name.out" >&2; fail "fio $name"; }
    grep -q "err= 0" "$tmp/$name.out" || { cat "$tmp/$name.out" >&2; fail "fio $name errors"; }
}

for member in mem:128M file; do
    if [ "$member" = file ]; then
        truncate -s 128M "$tmp/disk.img"; member=$tmp/disk.img
    fi
    s=$tmp/s.sock
    start_server "$s" "$member"
    uri="nbd+unix:///?socket=$s"
    run_fio "$uri" seq --rw=write --bs=256k --iodepth=8 --numjobs=2
    run_fio "$uri" rand --rw=randwrite --bs=4k --iodepth=32 --numjobs=4
    run_fio "$uri" mixed --rw=randrw --bsrange=512-64k --iodepth=16 --numjobs=3
    stop_server "$server_pid"
    rm -f "$tmp/disk.img"
done
echo PASS
