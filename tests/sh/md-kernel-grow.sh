#!/bin/bash
# md-kernel-grow.sh — the Linux kernel's md takes the RAID1s `uraid grow`
# leaves behind (in a linux-peer VM, tests/linux-peer):
#   g3: two copies grown to three with a new member, rebuilt by uraid: the
#       kernel assembles it whole (3 devices), reads the pattern written
#       before, and its check finds no mismatch;
#   g4: two copies grown to three roles without a new member: the kernel
#       starts it degraded (one role missing) and reads the pattern;
#   s2: grown to three roles and shrunk back to two: whole, 2 devices, read
#       and checked.
# Skips (77) when the linux-peer harness or a package it needs is missing.
MB=6
. "$(dirname "$0")/peer-lib.sh"
command -v mdadm >/dev/null || { echo "skip: mdadm missing"; exit 77; }

for name in g3 g4 s2; do
    add_images "$name" 2
    $URAID create --level=1 --name="$name" ${files[$name]} >/dev/null
    $URAID serve --run "nbdcopy '$D/pat' \"\$uri\"" ${files[$name]} 2>/dev/null
done
add_images g3new 1
$URAID grow -n 3 --add ${files[g3new]} ${files[g3]} >/dev/null 2>&1 || { echo "FAIL: grow g3"; exit 1; }
$URAID grow -n 3 ${files[g4]} >/dev/null 2>&1 || { echo "FAIL: grow g4"; exit 1; }
$URAID grow -n 3 ${files[s2]} >/dev/null 2>&1 && $URAID grow -n 2 ${files[s2]} >/dev/null 2>&1 ||
    { echo "FAIL: grow and shrink s2"; exit 1; }

# guest_state NAME MD: "state NAME RAID_DISKS DEGRADED" of /dev/mdMD
guest_state() {
    echo "echo \"state $1 \$(cat /sys/block/md$2/md/raid_disks) \$(cat /sys/block/md$2/md/degraded)\""
}
{
    guest_header
    # g3 assembled from its three members, the state read before the check
    echo "mdadm --assemble /dev/md0 ${devs[g3]} ${devs[g3new]} >/dev/null 2>&1 || echo 'ours g3 assemble-failed'"
    guest_state g3 0
    echo "mdadm --stop /dev/md0 >/dev/null 2>&1"
    guest_read_ours g3 0 1 ${devs[g3]} ${devs[g3new]}
    echo "mdadm --assemble --run /dev/md1 ${devs[g4]} >/dev/null 2>&1 || echo 'ours g4 assemble-failed'"
    guest_state g4 1
    echo "mdadm --stop /dev/md1 >/dev/null 2>&1"
    guest_read_ours g4 1 0 --run ${devs[g4]}
    echo "mdadm --assemble /dev/md2 ${devs[s2]} >/dev/null 2>&1 || echo 'ours s2 assemble-failed'"
    guest_state s2 2
    echo "mdadm --stop /dev/md2 >/dev/null 2>&1"
    guest_read_ours s2 2 1 ${devs[s2]}
    echo 'exit 0'
} > "$D/job.sh"

run_peer "${imgs[@]}"
fail=0
host_check_ours g3 1 "RAID1 grown to three copies"
host_check_ours g4 0 "RAID1 grown to three roles, degraded"
host_check_ours s2 1 "RAID1 grown and shrunk back to two"
for want_state in "g3 3 0" "g4 3 1" "s2 2 0"; do
    grep -q "^state $want_state$" <<< "$out" ||
        { echo "FAIL: kernel md state: '$(grep "^state ${want_state%% *} " <<< "$out")', want '$want_state'"; fail=1; }
done
[ $fail = 0 ] && echo "ok: the kernel sees the device counts uraid grow wrote"
exit $fail
