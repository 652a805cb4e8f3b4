#!/bin/bash
# md-kernel-bitmap.sh — arrays with a write-intent bitmap (mdadm's default
# above 100 GiB) that uraid served and then lost without a clean stop.
# uraid keeps the bitmap as md does (docs/md.md), so the kernel trusts it
# and resyncs only the chunks uraid was writing.  Shown in a linux-peer VM
# on a RAID1 (bitmap indexed by member sectors = array sectors), a RAID5
# on 3 (indexed by member sectors: array MiB 2k is member MiB k) and a
# RAID10 near-2 on 4 (indexed by array sectors):
#   1. the kernel creates each array with an internal bitmap (1 MiB
#      chunks) and writes it;
#   2. uraid serve writes the 4 MiB pattern at the start (RAID1 and
#      RAID10: bitmap chunks 0-3; RAID5: 0-1), is killed (SIGKILL), and 4 KiB of the
#      second member is changed behind its back in a dirty chunk (a torn
#      write of a write in flight; on the RAID5, its parity block) and in
#      chunk 20, which no write touched (the witness);
#   3. in the guest, mdadm -X finds those chunks dirty and the bitmap's
#      events equal to the superblock's; the kernel assembles the array
#      without calling the bitmap out of date and resyncs from the bitmap:
#      its check then counts the witness alone (one mismatch: the torn
#      write was resynced; a full resync would have erased both); after a
#      repair the check finds no mismatch, and the kernel reads what uraid
#      wrote.
# And a bitmap added to an existing array, both ways (in the same two
# boots): the kernel's `mdadm --grow --bitmap=internal` on a RAID5 and on a
# RAID1 (--write-behind=100) made without one; uraid reads those (mdadm -E
# and -X on the host, a writable serve keeps them), removes them and adds
# its own (`uraid grow --bitmap=none`, `--bitmap=internal`): the same place,
# chunk, sync size, daemon and write mode as mdadm and the kernel chose;
# then the kernel assembles ours: events equal, not out of date, 0 dirty,
# check 0, the data uraid wrote, bitmap/backlog 100.
# Skips (77) when the linux-peer harness or a package it needs is missing.
MB=4
. "$(dirname "$0")/peer-lib.sh"
command -v mdadm >/dev/null || { echo "skip: mdadm missing"; exit 77; }

add_images r1 2 32M
add_images r5 3 32M
add_images r10 4 32M
add_images g5 3 32M
add_images g1 2 32M
{
    guest_header
    echo "mdadm --create /dev/md0 --run --metadata=1.2 --level=1 --raid-devices=2 --bitmap=internal --bitmap-chunk=1M --assume-clean ${devs[r1]} >/tmp/c.log 2>&1 || { echo create-failed; cat /tmp/c.log; }"
    echo "mdadm --create /dev/md1 --run --metadata=1.2 --level=5 --chunk=64 --raid-devices=3 --bitmap=internal --bitmap-chunk=1M --assume-clean ${devs[r5]} >/tmp/c.log 2>&1 || { echo create-failed; cat /tmp/c.log; }"
    echo "mdadm --create /dev/md2 --run --metadata=1.2 --level=10 --layout=n2 --chunk=64 --raid-devices=4 --bitmap=internal --bitmap-chunk=1M --assume-clean ${devs[r10]} >/tmp/c.log 2>&1 || { echo create-failed; cat /tmp/c.log; }"
    for md in 0 1 2; do
        echo "dd if=/dev/zero bs=1M count=1 2>/dev/null | tr '\\0' A | dd of=/dev/md$md bs=1M oflag=direct 2>/dev/null; sync"
        echo "mdadm --stop /dev/md$md >/dev/null 2>&1 && echo created $md"
    done
    echo "mdadm --create /dev/md3 --run --metadata=1.2 --level=5 --chunk=64 --raid-devices=3 --bitmap=none --assume-clean ${devs[g5]} >/tmp/c.log 2>&1 || { echo create-failed; cat /tmp/c.log; }"
    echo "mdadm --create /dev/md4 --run --metadata=1.2 --level=1 --raid-devices=2 --bitmap=none --assume-clean ${devs[g1]} >/tmp/c.log 2>&1 || { echo create-failed; cat /tmp/c.log; }"
    echo "mdadm --grow /dev/md3 --bitmap=internal >/tmp/g.log 2>&1 && echo grown 3 || cat /tmp/g.log"
    echo "mdadm --grow /dev/md4 --bitmap=internal --write-behind=100 >/tmp/g.log 2>&1 && echo grown 4 || cat /tmp/g.log"
    echo "mdadm --stop /dev/md3 >/dev/null 2>&1; mdadm --stop /dev/md4 >/dev/null 2>&1"
    echo 'exit 0'
} > "$D/job.sh"
run_peer "${imgs[@]}"
for md in 0 1 2; do
    grep -q "^created $md" <<<"$out" || { echo "$out"; echo "FAIL: the kernel did not create md$md"; exit 1; }
done
for md in 3 4; do
    grep -q "^grown $md" <<<"$out" || { echo "$out"; echo "FAIL: the kernel did not add a bitmap to md$md"; exit 1; }
done

# A 1.2 member's bitmap as mdadm reads it on the host: its place (-E) and
# header (-X of a copy of its first 4 KiB), without the counts of dirty bits.
bm_summary() {
    local e at
    e=$(mdadm -E "$1")
    grep "Internal Bitmap" <<<"$e"
    at=$(( $(sed -n 's/ *Super Offset : \([0-9]*\) sectors.*/\1/p' <<<"$e") +
        $(sed -n 's/ *Internal Bitmap : \([0-9-]*\) sectors.*/\1/p' <<<"$e") ))
    dd if="$1" of="$D/bm.img" bs=512 skip="$at" count=8 2>/dev/null
    mdadm -X "$D/bm.img" 2>&1 | grep -E "Chunksize|Sync Size|Daemon|Write Mode|Bitmap :" | sed 's/,.*//'
}
# The kernel's bitmaps read, kept by a writable serve (which writes the
# pattern), then replaced by uraid's own.
for name in g5 g1; do
    # shellcheck disable=SC2086
    set -- ${files[$name]}
    wb=; [ $name = g1 ] && wb=--write-behind=100
    theirs=$(bm_summary "$1")
    grep -q "Chunksize" <<<"$theirs" || { echo "FAIL: $name: no kernel bitmap: $theirs"; exit 1; }
    $URAID serve --run "nbdcopy --flush $D/pat \"\$uri\"" "$@" 2>"$D/serve.log" ||
        { echo "FAIL: $name: serve: $(cat "$D/serve.log")"; exit 1; }
    grep -q "keeping its write-intent bitmap" "$D/serve.log" ||
        { echo "FAIL: $name: the kernel's bitmap not kept: $(cat "$D/serve.log")"; exit 1; }
    $URAID grow --bitmap=none "$@" >/dev/null || { echo "FAIL: $name: grow --bitmap=none"; exit 1; }
    mdadm -E "$1" | grep -q "Internal Bitmap" && { echo "FAIL: $name: bitmap left after none"; exit 1; }
    # shellcheck disable=SC2086
    $URAID grow --bitmap=internal $wb "$@" >/dev/null || { echo "FAIL: $name: grow --bitmap=internal"; exit 1; }
    ours=$(bm_summary "$1")
    [ "$ours" = "$theirs" ] ||
        { printf 'FAIL: %s: the bitmap uraid adds differs from the one mdadm and the kernel added:\n%s\n--- theirs:\n%s\n' "$name" "$ours" "$theirs"; exit 1; }
done

# uraid writes the pattern over the start of NAME and is killed; then the
# torn write (at member MiB TORN) and the witness go onto its second member.
serve_and_crash() {
    local name=$1 torn=$2 pid off
    # shellcheck disable=SC2086
    set -- ${files[$name]}
    $URAID examine "$1" | grep -q "Internal Bitmap" || { echo "FAIL: $name: no internal bitmap"; exit 1; }
    rm -f "$D/s.sock"
    $URAID serve -f --socket "$D/s.sock" "$@" 2>"$D/serve.log" &
    pid=$!
    for _ in $(seq 100); do [ -S "$D/s.sock" ] && break; sleep 0.1; done
    nbdcopy --flush "$D/pat" "nbd+unix:///?socket=$D/s.sock" || { echo "FAIL: $name: nbdcopy"; exit 1; }
    kill -KILL $pid
    wait $pid 2>/dev/null || true
    $URAID examine "$1" | grep -q "State : active" || { echo "FAIL: $name: not left active"; exit 1; }
    off=$($URAID examine "$2" | sed -n 's/ *Data Offset : \([0-9]*\) sectors/\1/p')
    for mib in "$torn" 20; do
        head -c 4096 /dev/urandom |
            dd of="$2" bs=4096 seek=$(((off * 512 + (mib << 20)) / 4096)) conv=notrunc 2>/dev/null
    done
}
# RAID1: member MiB 2 is in dirty chunk 2.  RAID5 (left-symmetric on 3,
# 64 KiB chunks): member MiB 1 is row 16, whose parity the second member
# holds (16 % 3 = 1), in dirty chunk 1: the resync rewrites that parity
# from the data, so what the kernel reads stays uraid's.
# RAID10 near-2 on 4, 64 KiB chunks: the second member mirrors the even
# chunks, so member MiB 1 (row 16) holds array chunk 32, at array MiB 2:
# dirty chunk 2; member MiB 20 is array MiB 40, which no write touched.
serve_and_crash r1 2
serve_and_crash r5 1
serve_and_crash r10 1

{
    guest_header
    echo "dmesg -c >/dev/null"
    echo "waitidle() { for i in \$(seq 600); do [ \"\$(cat /sys/block/md\$1/md/sync_action)\" = idle ] && break; sleep 0.2; done; }"
    echo "act() { echo \$2 > /sys/block/md\$1/md/sync_action; sleep 0.5; waitidle \$1; }"
    for md in 0 1 2 3 4; do
        names=(r1 r5 r10 g5 g1)
        name=${names[$md]}
        first=${devs[$name]%% *}
        echo "mdadm -X $first | sed -n 's/.* \\([0-9]*\\) dirty.*/md$md dirty \\1/p'"
        echo "bev=\$(mdadm -X $first | sed -n 's/^ *Events : //p'); sev=\$(mdadm -E $first | sed -n 's/^ *Events : //p')"
        echo "[ -n \"\$bev\" ] && [ \"\$bev\" = \"\$sev\" ] && echo md$md events-match"
        echo "mdadm --assemble /dev/md$md ${devs[$name]} >/tmp/a.log 2>&1 || { echo assemble-failed; cat /tmp/a.log; }"
        echo "dmesg | grep -q 'md$md: bitmap file is out of date' && echo md$md stale-bitmap"
        if [ $md -le 2 ]; then # crashed by uraid: resynced from the bitmap, the witness left
            echo "waitidle $md"
            echo "dmesg | grep -q 'md: md$md: resync done' && echo md$md resynced"
            echo "act $md check; echo \"md$md witness \$(cat /sys/block/md$md/md/mismatch_cnt)\""
            echo "act $md repair"
        else # given a bitmap by uraid
            echo "echo \"md$md backlog \$(cat /sys/block/md$md/md/bitmap/backlog)\""
        fi
        echo "act $md check; echo \"md$md mismatch \$(cat /sys/block/md$md/md/mismatch_cnt)\""
        echo "echo \"md$md data \$(dd if=/dev/md$md bs=1M count=\$MB 2>/dev/null | sha256sum | cut -d' ' -f1)\""
        echo "mdadm --stop /dev/md$md >/dev/null 2>&1"
    done
    echo 'exit 0'
} > "$D/job.sh"
run_peer "${imgs[@]}"
fail=0
# One witness block: raid1 checks in 64 KiB blocks (128 sectors), raid5 in
# 4 KiB stripes (8 sectors).
for w in "md0 dirty 4" "md0 events-match" "md0 resynced" "md0 witness 128" "md0 mismatch 0" \
    "md0 data $want" "md1 dirty 2" "md1 events-match" "md1 resynced" "md1 witness 8" \
    "md1 mismatch 0" "md1 data $want" "md2 dirty 4" "md2 events-match" "md2 resynced" \
    "md2 mismatch 0" "md2 data $want" "md3 dirty 0" "md3 events-match" "md3 mismatch 0" \
    "md3 data $want" "md4 dirty 0" "md4 events-match" "md4 mismatch 0" "md4 data $want" \
    "md4 backlog 100"; do
    grep -q "^$w\$" <<<"$out" || { echo "FAIL: expected '$w' from the kernel"; fail=1; }
done
# RAID10's check block: one witness block, whatever its size (a full
# resync would have left none).
w10=$(sed -n 's/^md2 witness \([0-9]*\)$/\1/p' <<<"$out")
[ -n "$w10" ] && [ "$w10" -ge 8 ] && [ "$w10" -le 128 ] ||
    { echo "FAIL: md2: the kernel's check counted '$w10' mismatched sectors, not one witness block"; fail=1; }
grep "stale-bitmap" <<<"$out" && { echo "FAIL: the kernel found our bitmap out of date"; fail=1; }
[ $fail = 0 ] || echo "$out"
[ $fail = 0 ] && echo "ok: the kernel trusts uraid's bitmap on RAID1, RAID5 and RAID10 (the written chunks dirty, events equal, not out of date), resyncs from it alone, 0 mismatches after repair, reads uraid's data; uraid reads and keeps the bitmap the kernel added to an array, adds one where and as mdadm does, and the kernel assembles that (0 dirty, check 0, backlog 100)"
exit $fail
