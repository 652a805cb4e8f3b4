#!/bin/bash
# md-kernel-readd.sh — re-add from the write-intent bitmap, both ways
# between uraid and the kernel's md (in a linux-peer VM), on RAID1 arrays
# with 1 MiB bitmap chunks, and write-mostly as the kernel reads it:
#   ua: uraid fills it, closes it clean (bitmap clear), serves it again,
#       `uraid fail`s member 1, writes 4 MiB at MiB 8 (chunks 8-11) and
#       stops; a 4 KiB witness is changed on member 1 at MiB 20, a chunk
#       nobody wrote.  mdadm -X finds 4 dirty chunks; the kernel assembles
#       it, takes member 1 back with `mdadm --re-add` and resyncs: its
#       check then counts the witness alone (a full recovery would have
#       erased it: the kernel honoured our bitmap), the data is uraid's,
#       and after a repair no mismatch is left.
#   kd: the kernel creates it, writes, `mdadm --fail`s member 1, writes
#       4 MiB at MiB 8, and stops (mdadm -X: its dirty count); uraid serve
#       takes member 1 back at the start (stale, within the bitmap) and
#       resyncs exactly the kernel's dirty chunks (`uraid detail --json`
#       against mdadm -X); the kernel then assembles it with both members
#       in sync, its check finds 0 and it reads the data.
#   uw: uraid creates it with member 1 --write-mostly; the kernel assembles
#       it and shows write_mostly in that member's sysfs state and
#       "writemostly" in mdadm --detail.
#   ur: member 1 is remote (nbdkit over TCP), --write-mostly, and the array
#       has --write-behind=16; uraid serve fills it and closes it clean,
#       serves it again, the server is stopped
#       (SIGSTOP: the member times out and fails), 4 MiB are written at MiB
#       8, the server resumes, and uraid re-adds the member from the bitmap
#       by itself (4 chunks resynced); the kernel assembles the two images,
#       not degraded, check 0, reads the data, and shows write_mostly and
#       the bitmap's backlog of 16 (write-behind).
# Skips (77) when the linux-peer harness or a package it needs is missing.
MB=4
. "$(dirname "$0")/peer-lib.sh"
command -v mdadm >/dev/null || { echo "skip: mdadm missing"; exit 77; }
command -v nbdkit >/dev/null || { echo "skip: nbdkit missing"; exit 77; }
/usr/bin/python3 -c 'import nbd' 2>/dev/null || { echo "skip: python3-libnbd missing"; exit 77; }
export LINUX_PEER_SMP=${LINUX_PEER_SMP:-1}

add_images ua 2 32M
add_images kd 2 32M
add_images uw 2 16M
add_images ur 2 16M
# shellcheck disable=SC2086
set -- ${files[ua]}
ua0=$1 ua1=$2
sock=$D/s.sock ctl=$D/s.ctl
uri="nbd+unix:///?socket=$sock"

# serve FILES...: uraid serve with a control socket, in the background
serve() {
    rm -f "$sock" "$ctl"
    $URAID serve -f --socket "$sock" --control "$ctl" "$@" 2>>"$D/serve.log" &
    spid=$!
    wait_until 100 test -S "$sock" -a -S "$ctl" || true
}
# fill NAME FILES...: the pattern written through a serve closed clean (the bitmap
# clear), then served again
fill() {
    local name=$1
    shift
    serve "$@"
    nbdcopy --flush "$D/pat" "$uri" || { echo "FAIL: $name: fill"; exit 1; }
    unserve
    serve "$@"
}
# write_at8 NAME: the pattern again at MiB 8 (bitmap chunks 8-11), flushed
write_at8() {
    /usr/bin/python3 - "$uri" "$D/pat" <<'PY' || { echo "FAIL: $1: write while away"; exit 1; }
import nbd, sys
h = nbd.NBD()
h.connect_uri(sys.argv[1])
h.pwrite(open(sys.argv[2], 'rb').read(), 8 << 20)
h.flush()
h.shutdown()
PY
}
unserve() { kill -TERM "$spid"; wait "$spid" || { cat "$D/serve.log"; echo "FAIL: serve exited badly"; exit 1; }; }
jfield() {
    $URAID detail --json "$ctl" > "$D/j" || { echo "FAIL: detail"; exit 1; }
    python3 -c "import json,sys; j=json.load(open(sys.argv[1]))['arrays'][0]; print($1)" "$D/j"
}
readded() { [ "$(jfield "j['degraded']")" = False ]; }
# host_dirty FILE: the dirty count mdadm -X gives a v1.2 member's bitmap
host_dirty() {
    dd if="$1" of="$D/bm.img" bs=512 skip=16 count=8 2>/dev/null
    mdadm -X "$D/bm.img" 2>/dev/null | sed -n 's/.* \([0-9]*\) dirty.*/\1/p'
}

# ---- ua: uraid degrades, the kernel re-adds ----
$URAID create --level=1 --bitmap=internal --bitmap-chunk=1024 --assume-clean ${files[ua]} >/dev/null ||
    { echo "FAIL: ua: create"; exit 1; }
# shellcheck disable=SC2086
fill ua ${files[ua]}
$URAID fail "$ctl" "$ua1" >/dev/null || { echo "FAIL: ua: uraid fail"; exit 1; }
write_at8 ua
unserve
ua_dirty=$(host_dirty "$ua0")
off=$($URAID examine "$ua1" | sed -n 's/ *Data Offset : \([0-9]*\) sectors/\1/p')
head -c 4096 /dev/urandom | dd of="$ua1" bs=4096 seek=$(((off * 512 + (20 << 20)) / 4096)) conv=notrunc 2>/dev/null

# ---- uw: write-mostly ----
# shellcheck disable=SC2086
set -- ${devs[uw]}
uw1=$2
# shellcheck disable=SC2086
set -- ${files[uw]}
$URAID create --level=1 --bitmap=none "$1" --write-mostly "$2" >/dev/null || { echo "FAIL: uw: create"; exit 1; }

# ---- ur: a remote write-mostly member failed and re-added over TCP ----
# shellcheck disable=SC2086
set -- ${files[ur]}
ur0=$1
port=$((20000 + RANDOM % 20000))
nbdkit -f -i 127.0.0.1 -p $port file "$2" 2>>"$D/nbdkit.log" &
npid=$!
ur_uri="nbd://127.0.0.1:$port/?timeout=1&reconnect=0.2"
wait_until 100 nbdinfo --size "nbd://127.0.0.1:$port/" >/dev/null 2>&1 || true
$URAID create --level=1 --bitmap=internal --bitmap-chunk=1024 --assume-clean --write-behind=16 \
    "$ur0" --write-mostly "$ur_uri" >/dev/null || { echo "FAIL: ur: create"; exit 1; }
fill ur "$ur0" "$ur_uri"
kill -STOP $npid
write_at8 ur
grep -q "member 1 .* failed" "$D/serve.log" || { cat "$D/serve.log"; echo "FAIL: ur: the member did not fail"; exit 1; }
kill -CONT $npid
wait_until 300 readded || { cat "$D/serve.log"; echo "FAIL: ur: not re-added"; exit 1; }
ur_chunks=$(jfield "j['readd']['last_chunks']")
unserve
kill $npid
wait $npid 2>/dev/null || true
[ "$ur_chunks" = 4 ] || { echo "FAIL: ur: the re-add resynced $ur_chunks chunks, 4 were written"; exit 1; }

# shellcheck disable=SC2086
set -- ${devs[ua]}
gua1=$2
# shellcheck disable=SC2086
set -- ${devs[kd]}
gkd1=$2
# shellcheck disable=SC2086
set -- ${devs[ur]}
gur1=$2
{
    guest_header
    echo "waitidle() { for i in \$(seq 900); do [ \"\$(cat /sys/block/md\$1/md/sync_action)\" = idle ] && [ \"\$(cat /sys/block/md\$1/md/degraded)\" = 0 ] && break; sleep 0.2; done; }"
    echo "act() { echo \$2 > /sys/block/md\$1/md/sync_action; sleep 0.5; waitidle \$1; }"
    # ua
    echo "echo \"ua dirty \$(mdadm -X ${devs[ua]%% *} | sed -n 's/.* \\([0-9]*\\) dirty.*/\\1/p')\""
    echo "mdadm --assemble --run /dev/md0 ${devs[ua]} >/tmp/a.log 2>&1 || { echo ua assemble-failed; cat /tmp/a.log; }"
    echo "grep -q '${gua1#/dev/}' /proc/mdstat || { mdadm /dev/md0 --re-add $gua1 >/tmp/r.log 2>&1 && echo ua readd-ok || { echo ua readd-refused; cat /tmp/r.log; }; }"
    echo "waitidle 0"
    echo "echo \"ua degraded \$(cat /sys/block/md0/md/degraded)\""
    echo "act 0 check; echo \"ua witness \$(cat /sys/block/md0/md/mismatch_cnt)\""
    echo "echo \"ua data \$(dd if=/dev/md0 bs=1M skip=8 count=\$MB 2>/dev/null | sha256sum | cut -d' ' -f1)\""
    echo "act 0 repair; act 0 check; echo \"ua mismatch \$(cat /sys/block/md0/md/mismatch_cnt)\""
    echo "mdadm --stop /dev/md0 >/dev/null 2>&1"
    # kd
    echo "mdadm --create /dev/md1 --run --metadata=1.2 --level=1 --raid-devices=2 --bitmap=internal --bitmap-chunk=1M --assume-clean ${devs[kd]} >/tmp/c.log 2>&1 || { echo kd create-failed; cat /tmp/c.log; }"
    echo "pattern | dd of=/dev/md1 bs=1M iflag=fullblock oflag=direct 2>/dev/null; sync"
    echo "sleep 6; mdadm /dev/md1 --fail $gkd1 >/dev/null 2>&1 && echo kd failed"
    echo "pattern | dd of=/dev/md1 bs=1M seek=8 iflag=fullblock oflag=direct 2>/dev/null; sync"
    echo "mdadm --stop /dev/md1 >/dev/null 2>&1"
    echo "echo \"kd dirty \$(mdadm -X ${devs[kd]%% *} | sed -n 's/.* \\([0-9]*\\) dirty.*/\\1/p')\""
    # uw
    echo "mdadm --assemble /dev/md2 ${devs[uw]} >/tmp/a.log 2>&1 || { echo uw assemble-failed; cat /tmp/a.log; }"
    echo "echo \"uw state \$(cat /sys/block/md2/md/dev-${uw1#/dev/}/state)\""
    echo "mdadm --detail /dev/md2 | grep -q 'writemostly.*$uw1' && echo uw detail-writemostly"
    echo "mdadm --stop /dev/md2 >/dev/null 2>&1"
    # ur
    echo "mdadm --assemble /dev/md3 ${devs[ur]} >/tmp/a.log 2>&1 || { echo ur assemble-failed; cat /tmp/a.log; }"
    echo "echo \"ur degraded \$(cat /sys/block/md3/md/degraded)\""
    echo "echo \"ur state \$(cat /sys/block/md3/md/dev-${gur1#/dev/}/state)\""
    echo "echo \"ur backlog \$(cat /sys/block/md3/md/bitmap/backlog)\""
    echo "act 3 check; echo \"ur mismatch \$(cat /sys/block/md3/md/mismatch_cnt)\""
    echo "echo \"ur data \$(dd if=/dev/md3 bs=1M skip=8 count=\$MB 2>/dev/null | sha256sum | cut -d' ' -f1)\""
    echo "mdadm --stop /dev/md3 >/dev/null 2>&1"
    echo 'exit 0'
} > "$D/job.sh"
run_peer "${imgs[@]}"
fail=0
expect() { grep -q "^$1\$" <<<"$out" || { echo "FAIL: expected '$1' from the kernel"; fail=1; }; }
want8=$want # the pattern, read back from MiB 8
expect "ua dirty $ua_dirty"
[ "$ua_dirty" = 4 ] || { echo "FAIL: ua: our bitmap has $ua_dirty dirty chunks, 4 were written"; fail=1; }
grep -q "^ua assemble-failed" <<<"$out" && fail=1
grep -q "^ua readd-refused" <<<"$out" && { echo "FAIL: the kernel refused to re-add our member"; fail=1; }
expect "ua degraded 0"
expect "ua witness 128"
expect "ua data $want8"
expect "ua mismatch 0"
expect "kd failed"
expect "uw detail-writemostly"
grep -q "^uw state .*write_mostly" <<<"$out" || { echo "FAIL: uw: $(grep '^uw state' <<<"$out")"; fail=1; }
grep -q "^ur assemble-failed" <<<"$out" && fail=1
expect "ur degraded 0"
expect "ur mismatch 0"
expect "ur data $want8"
expect "ur backlog 16"
grep -q "^ur state .*write_mostly" <<<"$out" || { echo "FAIL: ur: $(grep '^ur state' <<<"$out")"; fail=1; }
kd_dirty=$(sed -n 's/^kd dirty \([0-9]*\)$/\1/p' <<<"$out")
[ -n "$kd_dirty" ] && [ "$kd_dirty" -ge 4 ] || { echo "FAIL: kd: the kernel's bitmap has '$kd_dirty' dirty chunks"; fail=1; }
[ $fail = 0 ] || { echo "$out"; exit 1; }
how="mdadm --assemble took it back itself"
grep -q "^ua readd-ok" <<<"$out" && how="mdadm --re-add"
echo "ok: the kernel re-adds a member uraid failed ($how): our bitmap's 4 dirty chunks resynced, the witness outside them left (check 128), 0 after repair, reads uraid's data"
echo "ok: the kernel reads write-mostly from our superblock ($(grep '^uw state' <<<"$out"))"
echo "ok: the kernel assembles the array whose remote member uraid re-added over TCP ($ur_chunks chunks resynced): not degraded, check 0, our data, $(grep '^ur state' <<<"$out"), write-behind backlog 16"

# ---- kd: uraid re-adds the member the kernel failed ----
serve ${files[kd]}
wait_until 300 readded || { cat "$D/serve.log"; echo "FAIL: kd: not re-added"; exit 1; }
chunks=$(jfield "j['readd']['last_chunks']")
bytes=$(jfield "j['readd']['last_bytes']")
unserve
[ "$chunks" = "$kd_dirty" ] || { echo "FAIL: kd: uraid resynced $chunks bitmap chunks, the kernel's bitmap had $kd_dirty dirty"; exit 1; }
[ "$bytes" = $((kd_dirty << 20)) ] || { echo "FAIL: kd: $bytes bytes resynced for $kd_dirty chunks"; exit 1; }
echo "ok: uraid re-adds the member the kernel failed: $chunks chunks ($bytes bytes) resynced, the kernel's dirty count"
{
    guest_header
    echo "mdadm --assemble /dev/md1 $(peer_dev 0) $(peer_dev 1) >/tmp/a.log 2>&1 || { echo kd assemble-failed; cat /tmp/a.log; }"
    echo "echo \"kd degraded \$(cat /sys/block/md1/md/degraded)\""
    echo "echo check > /sys/block/md1/md/sync_action; sleep 0.5"
    echo "for i in \$(seq 900); do [ \"\$(cat /sys/block/md1/md/sync_action 2>/dev/null || echo idle)\" = idle ] && break; sleep 0.2; done"
    echo "echo \"kd mismatch \$(cat /sys/block/md1/md/mismatch_cnt)\""
    echo "echo \"kd data \$(dd if=/dev/md1 bs=1M skip=8 count=\$MB 2>/dev/null | sha256sum | cut -d' ' -f1)\""
    echo "mdadm --stop /dev/md1 >/dev/null 2>&1"
    echo 'exit 0'
} > "$D/job.sh"
# shellcheck disable=SC2086
run_peer ${files[kd]} # its first two disks now
expect "kd degraded 0"
expect "kd mismatch 0"
expect "kd data $want8"
[ $fail = 0 ] || { echo "$out"; exit 1; }
echo "ok: the kernel assembles the array uraid re-added its member to, in sync, check 0, the data read back"
