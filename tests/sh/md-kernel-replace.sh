#!/bin/bash
# md-kernel-replace.sh — md's hot replacement (mdadm --replace) both ways
# with the Linux kernel's md, in one linux-peer boot (peer-batch-5):
#   ours:   a RAID1 whose replacement uraid started (`uraid replace`) and a
#           serve stopped (SIGTERM) part-way, its recovery offset saved: the
#           kernel assembles it, continues the replacement from that offset
#           (sync_completed, held at 1 KiB/s), ends it (the replacement in
#           the role, degraded 0), reads the pattern and its check finds
#           0 mismatches;
#   theirs: a RAID5 made by mdadm whose `mdadm --replace` the kernel ran
#           held at 1 MiB/s and stopped part-way: uraid examines the
#           replacement as mdadm does ("Replacement device"), reads the
#           pattern read-only from the member it replaces, `uraid rebuild`
#           finishes it, and then uraid check, the pattern and mdadm
#           --examine (the replacement active, the old member left out)
#           agree.
# Skips (77) when the linux-peer harness or a package it needs is missing.
MB=4
. "$(dirname "$0")/peer-lib.sh"
command -v mdadm >/dev/null || { echo "skip: mdadm missing"; exit 77; }
field() { $URAID examine "$1" 2>/dev/null | sed -n "s/^ *$2 : \([0-9]*\).*/\1/p"; }
fail=0

# ours: RAID1 a.0 a.1, a.2 replacing a.0, stopped part-way
add_images a 3 8M
set -- ${files[a]}
$URAID create --level=1 --name=a "$1" "$2" >/dev/null
$URAID serve --run "nbdcopy '$D/pat' \"\$uri\"" "$1" "$2" 2>/dev/null
$URAID replace --no-copy "$1" --with "$3" "$1" "$2" >/dev/null 2>&1 ||
    { echo "FAIL: uraid replace"; exit 1; }
$URAID serve -f --socket "$D/a.sock" --sync-speed-min 1M --sync-speed-max 1M "$@" 2>/dev/null &
pid=$!
saved() { local o; o=$(field "$1" "Recovery Offset"); [ "${o:-0}" -gt 0 ]; }
wait_until 300 saved "$3" ||
    { echo "FAIL: ours: no recovery offset saved"; exit 1; }
kill -TERM $pid
wait $pid || true
off=$(field "$3" "Recovery Offset")
[ "${off:-0}" -gt 0 ] || { echo "FAIL: ours: the replacement ended before the stop"; exit 1; }
echo "ours: uraid stopped its replacement at sector $off"

# theirs: four blank images, the kernel's RAID5 on the first three
add_images b 4 8M
set -- ${devs[b]}
bdevs="$1 $2 $3"
bnew=$4
{
    guest_header
    guest_resume_recovery a 0 ${devs[a]}
    echo "echo \"roles a \$(mdadm --examine ${devs[a]} 2>/dev/null | sed -n 's/ *Device Role : //p' | tr ' ' _ | tr '\n' ' ')\""
    guest_read_ours a 0 1 ${devs[a]}
    echo "mdadm --create /dev/md1 --run --metadata=1.2 --level=5 --chunk=64 --raid-devices=3 $bdevs >/tmp/c.log 2>&1 || { echo 'theirs b create-failed'; cat /tmp/c.log; }"
    echo "while [ \"\$(cat /sys/block/md1/md/sync_action)\" != idle ]; do sleep 0.2; done"
    echo "pattern | dd of=/dev/md1 bs=1M iflag=fullblock oflag=direct 2>/dev/null; sync"
    echo "mdadm /dev/md1 --add $bnew >/dev/null 2>&1"
    echo "echo 1000 > /proc/sys/dev/raid/speed_limit_min; echo 1000 > /proc/sys/dev/raid/speed_limit_max"
    echo "mdadm /dev/md1 --replace $1 --with $bnew >/tmp/r.log 2>&1 || { echo 'theirs b replace-failed'; cat /tmp/r.log; }"
    echo "for t in \$(seq 100); do [ \"\$(cat /sys/block/md1/md/sync_action)\" = recover ] && break; sleep 0.2; done; sleep 2"
    echo "echo \"held b \$(cat /sys/block/md1/md/sync_completed)\""
    echo "mdadm --stop /dev/md1 >/dev/null 2>&1"
    echo "echo 1000 > /proc/sys/dev/raid/speed_limit_min; echo 200000 > /proc/sys/dev/raid/speed_limit_max"
    echo 'exit 0'
} > "$D/job.sh"
t0=$SECONDS
run_peer "${imgs[@]}"
echo "the guest job took $((SECONDS - t0)) s"

# ours, read back from the guest's lines
host_check_resumed a "$off" uraid
grep -q "^degraded a 0$" <<< "$out" || { echo "FAIL: a not whole after the kernel: $(grep "^degraded a" <<< "$out")"; fail=1; }
host_check_ours a 1 "RAID1 with uraid's replacement, ended by the kernel"
roles=$(grep "^roles a " <<< "$out" || true)
[ "$roles" = "roles a Active_device_0 Active_device_1 Active_device_0 " ] ||
    { echo "FAIL: a: the kernel's roles after the replacement: '$roles'"; fail=1; }
set -- ${files[a]}
got=$($URAID serve --readonly --run 'nbdcopy "$uri" - | head -c '$((MB << 20))' | sha256sum' "$2" "$3" 2>/dev/null | cut -d' ' -f1)
[ "$got" = "$want" ] || { echo "FAIL: uraid re-read of a after the kernel: $got"; fail=1; }

# theirs
grep -q "^held b [1-9][0-9]* / " <<< "$out" || { echo "FAIL: b: the kernel's replacement was not held part-way: $(grep "^held b\|theirs b" <<< "$out")"; exit 1; }
echo "theirs: the kernel held its replacement at $(grep "^held b" <<< "$out")"
set -- ${files[b]}
old=$1 new=$4
e=$($URAID examine "$new" 2>&1)
grep -q "Device Role : Replacement device 0" <<< "$e" || { echo "FAIL: b: uraid examine: $(grep Role <<< "$e")"; fail=1; }
grep -q "Device Role : Replacement device 0" <<< "$(mdadm --examine "$new" 2>&1)" ||
    { echo "FAIL: b: mdadm --examine does not show the replacement"; fail=1; }
got=$($URAID serve --readonly --run 'nbdcopy "$uri" - | head -c '$((MB << 20))' | sha256sum' "$@" 2>/dev/null | cut -d' ' -f1)
[ "$got" = "$want" ] || { echo "FAIL: uraid read-only read of b mid-replacement: $got"; fail=1; }
r=$($URAID rebuild -v "$@" 2>&1) || { echo "FAIL: b: uraid rebuild: $r"; fail=1; }
grep -q "replaced $old" <<< "$r" || { echo "FAIL: b: not replaced: $r"; fail=1; }
$URAID check "$2" "$3" "$new" >/dev/null 2>&1 || { echo "FAIL: uraid check of b after its replacement"; fail=1; }
got=$($URAID serve --readonly --run 'nbdcopy "$uri" - | head -c '$((MB << 20))' | sha256sum' "$2" "$3" "$new" 2>/dev/null | cut -d' ' -f1)
[ "$got" = "$want" ] || { echo "FAIL: uraid read of b after its replacement: $got"; fail=1; }
for f in "$2" "$3" "$new"; do
    x=$(mdadm --examine "$f" 2>&1)
    grep -q "Device Role : Active device" <<< "$x" && ! grep -q "Recovery Offset" <<< "$x" &&
        grep -q "Array State : AAA " <<< "$x" || { echo "FAIL: b: mdadm --examine $f: $(grep "Role\|State\|Offset" <<< "$x")"; fail=1; }
done
[ $fail = 0 ] && echo "ok: the kernel ends uraid's replacement and uraid the kernel's"
exit $fail
