#!/bin/bash
# md-kernel-force.sh — forced assembly agrees with the kernel's (in a
# linux-peer VM, tests/linux-peer).  The kernel makes a RAID5 of four
# members and loses two, one after the other, with writes between: the
# array can start again only with the fresher of the two lost members
# (mdadm --assemble --force).  uraid serve --readonly --force must pick that
# member, say it was stale by how many events, export what the kernel's
# forced assembly reads, and change no byte; without --force it refuses,
# naming why.  One boot: after making the array the guest copies the
# members (O_DIRECT, past any page cache) to RAM and force-assembles those
# copies on loop devices, so the images the host reads are the ones the
# kernel left, and the copies are checked to be byte for byte those.
# Skips (77) when the linux-peer harness or a package it needs is missing.
MB=4
. "$(dirname "$0")/peer-lib.sh"
command -v mdadm >/dev/null || { echo "skip: mdadm missing"; exit 77; }
fail=0
add_images f 4 16M
set -- ${devs[f]}
cat > "$D/make.sh" <<JOB
#!/bin/sh
mdadm --create /dev/md0 --run --level=5 --raid-devices=4 --chunk=64 --assume-clean $* >/dev/null 2>&1 || echo create-failed
dd if=/dev/urandom of=/dev/md0 bs=1M count=4 oflag=direct 2>/dev/null
mdadm /dev/md0 --fail $4 >/dev/null 2>&1; sleep 0.5
dd if=/dev/urandom of=/dev/md0 bs=1M count=2 seek=4 oflag=direct 2>/dev/null
mdadm /dev/md0 --fail $3 >/dev/null 2>&1; sleep 0.5
mdadm --stop /dev/md0 >/dev/null 2>&1
for d in $*; do echo "events \$d \$(mdadm --examine \$d | sed -n 's/^ *Events : //p')"; done
JOB
i=0
for d in $*; do
    echo "dd if=$d of=/tmp/copy$i bs=1M iflag=direct 2>/dev/null; losetup /dev/loop$i /tmp/copy$i"
    echo "echo \"copy $i \$(sha256sum < /tmp/copy$i | cut -d' ' -f1)\""
    loops+="/dev/loop$i "; i=$((i + 1))
done >> "$D/make.sh"
cat >> "$D/make.sh" <<JOB
mdadm --assemble --force --run /dev/md1 $loops >/dev/null 2>&1 || echo "assemble-failed"
echo "forced \$(sha256sum < /dev/md1 | cut -d' ' -f1) \$(cat /sys/block/md1/md/degraded)"
cat /proc/mdstat
JOB
out=$(LINUX_PEER_TIMEOUT=300 "$PEER/run.sh" "$D/make.sh" "${imgs[@]}" 2>&1) || {
    echo "$out"; echo "FAIL: the kernel could not make the array"; exit 1; }
grep events <<< "$out"
grep -q create-failed <<< "$out" && { echo "$out"; echo "FAIL: mdadm --create"; exit 1; }

before=$(sha256sum "${imgs[@]}")
msg=$($URAID serve --readonly --run true "${imgs[@]}" 2>&1) && { echo "FAIL: started without --force"; fail=1; }
grep -q "too many members missing" <<< "$msg" || { echo "FAIL: no reason without --force: $msg"; fail=1; }
$URAID serve --readonly --force --run 'nbdcopy "$uri" - | sha256sum | cut -d" " -f1' "${imgs[@]}" \
    > "$D/ours" 2> "$D/log" || { cat "$D/log"; echo "FAIL: forced serve"; fail=1; }
grep -q "${imgs[2]} is stale by 1 events" "$D/log" ||
    { cat "$D/log"; echo "FAIL: the fresher lost member was not taken, or not named"; fail=1; }
grep -q "${imgs[3]} (events [0-9]*, newest [0-9]*) left out" "$D/log" ||
    { cat "$D/log"; echo "FAIL: the older lost member was not left out"; fail=1; }
[ "$before" = "$(sha256sum "${imgs[@]}")" ] || { echo "FAIL: a forced read-only serve changed a member"; fail=1; }

i=0
for f in "${imgs[@]}"; do
    grep -q "^copy $i $(sha256sum < "$f" | cut -d' ' -f1)\$" <<< "$out" ||
        { echo "$out"; echo "FAIL: the guest's copy $i of $f is not the image"; fail=1; }
    i=$((i + 1))
done
kernel=$(sed -n 's/^forced \([0-9a-f]*\) .*/\1/p' <<< "$out")
[ -n "$kernel" ] && [ "$kernel" = "$(cat "$D/ours")" ] || {
    echo "$out"; echo "FAIL: ours $(cat "$D/ours"), the kernel's forced assembly $kernel"; fail=1; }
[ $fail = 0 ] && echo "ok: uraid's forced read-only RAID5 equals the kernel's mdadm --assemble --force ($kernel)"
exit $fail
