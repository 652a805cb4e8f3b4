#!/bin/bash
# md-kernel-bitmap.sh — an array with a write-intent bitmap (mdadm's
# default above 100 GiB) that uraid served and then lost without a clean
# stop.  uraid does not update the bitmap (docs/md.md), so the kernel must
# not trust it: with the superblocks' events ahead of the bitmap's, md
# forces a full resync.  Shown in a linux-peer VM:
#   1. the kernel creates a RAID1 with an internal bitmap and writes it;
#   2. uraid serve writes new data, is killed (SIGKILL), and 4 KiB of one
#      member's data is changed behind its back (a torn write the bitmap
#      does not know about);
#   3. the kernel assembles the array: it reports the bitmap out of date,
#      resyncs the whole array, its check then finds no mismatch, and it
#      reads what uraid wrote.
# Skips (77) when QEMU, a kernel image or linux-peer is not available.
MB=4
. "$(dirname "$0")/peer-lib.sh"
command -v mdadm >/dev/null || { echo "skip: mdadm missing"; exit 77; }

add_images bm 2 200M
{
    guest_header
    echo "mdadm --create /dev/md0 --run --metadata=1.2 --level=1 --raid-devices=2 --bitmap=internal --bitmap-chunk=1M --assume-clean ${devs[bm]} >/tmp/c.log 2>&1 || { echo create-failed; cat /tmp/c.log; }"
    echo "dd if=/dev/zero bs=1M count=32 2>/dev/null | tr '\\0' A | dd of=/dev/md0 bs=1M oflag=direct 2>/dev/null; sync"
    echo "mdadm --stop /dev/md0 >/dev/null 2>&1 && echo created"
    echo 'exit 0'
} > "$D/job.sh"
run_peer "${imgs[@]}"
grep -q "^created" <<<"$out" || { echo "$out"; echo "FAIL: the kernel did not create the array"; exit 1; }
# shellcheck disable=SC2086
set -- ${files[bm]}
$URAID examine "$1" | grep -q "Internal Bitmap" || { echo "FAIL: no internal bitmap"; exit 1; }

# uraid writes the pattern over the start and is killed.
$URAID serve -f --socket "$D/s.sock" "$@" 2>"$D/serve.log" &
pid=$!
for _ in $(seq 100); do [ -S "$D/s.sock" ] && break; sleep 0.1; done
nbdcopy --flush "$D/pat" "nbd+unix:///?socket=$D/s.sock" || { echo "FAIL: nbdcopy"; exit 1; }
kill -KILL $pid
wait $pid 2>/dev/null || true
$URAID examine "$1" | grep -q "State : active" || { echo "FAIL: not left active"; exit 1; }
off=$($URAID examine "$2" | sed -n 's/ *Data Offset : \([0-9]*\) sectors/\1/p')
head -c 4096 /dev/urandom | dd of="$2" bs=4096 seek=$(((off * 512 + (100 << 20)) / 4096)) conv=notrunc 2>/dev/null

{
    guest_header
    echo "dmesg -c >/dev/null"
    echo "mdadm --assemble /dev/md0 ${devs[bm]} >/tmp/a.log 2>&1 || { echo assemble-failed; cat /tmp/a.log; }"
    echo "dmesg | grep -q 'bitmap file is out of date' && echo stale-bitmap"
    echo "for i in \$(seq 600); do [ \"\$(cat /sys/block/md0/md/sync_action)\" = idle ] && break; sleep 0.2; done"
    echo "dmesg | grep -q 'md: md0: resync done' && echo resynced"
    echo "echo check > /sys/block/md0/md/sync_action; sleep 0.5"
    echo "for i in \$(seq 600); do [ \"\$(cat /sys/block/md0/md/sync_action)\" = idle ] && break; sleep 0.2; done"
    echo "echo \"mismatch \$(cat /sys/block/md0/md/mismatch_cnt)\""
    echo "echo \"data \$(dd if=/dev/md0 bs=1M count=\$MB 2>/dev/null | sha256sum | cut -d' ' -f1)\""
    echo "mdadm --stop /dev/md0 >/dev/null 2>&1"
    echo 'exit 0'
} > "$D/job.sh"
run_peer "${imgs[@]}"
fail=0
for w in stale-bitmap resynced "mismatch 0" "data $want"; do
    grep -q "^$w" <<<"$out" || { echo "FAIL: expected '$w' from the kernel"; fail=1; }
done
[ $fail = 0 ] || echo "$out"
[ $fail = 0 ] && echo "ok: the kernel finds the bitmap out of date, resyncs all, 0 mismatches, reads uraid's data"
exit $fail
