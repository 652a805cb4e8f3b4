#!/bin/bash
# md-kernel-force.sh — forced assembly agrees with the kernel's (in a
# linux-peer VM, tests/linux-peer).  The kernel makes a RAID5 of four
# members and loses two, one after the other, with writes between: the
# array can start again only with the fresher of the two lost members
# (mdadm --assemble --force).  uraid serve --readonly --force must pick that
# member, say it was stale by how many events, export what the kernel's
# forced assembly reads, and change no byte; without --force it refuses,
# naming why.  A RAID5 that uraid served and failed (two members failing
# their writes) gets the same from the kernel's mdadm: no start without
# --force, role 2's member taken back with it.  One boot: after making the array the guest copies the
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

# A RAID5 that uraid failed as the kernel fails one (docs/raid.md, "An
# array that has failed"): served, it loses roles 1 and 2 (their writes
# failing, one after the other) under a copy that then fails.  The
# kernel's mdadm must refuse to start it and, with --force, take role 2's
# member back (the fresher), reading what uraid's --force --readonly reads.
add_images u 4 8M
read -r -a uf <<< "${files[u]}"
$URAID create --level=5 --raid-devices=4 --chunk=64 "${uf[@]}" >/dev/null 2>&1 ||
    { echo "FAIL: uraid create"; exit 1; }
usize=$($URAID serve --readonly --run 'nbdinfo --size "$uri"' "${uf[@]}" 2>/dev/null)
head -c "$usize" /dev/urandom > "$D/u.src"
$URAID serve --run "nbdcopy '$D/u.src' \"\$uri\"" "${uf[0]}" "fault:after=20,mode=write:${uf[1]}" \
    "fault:after=50,mode=write:${uf[2]}" "${uf[3]}" > "$D/u.log" 2>&1 &&
    { echo "FAIL: the copy onto the failing array succeeded"; fail=1; }
mdadm --examine "${uf[0]}" | grep -q "Array State : A..A " ||
    { mdadm --examine "${uf[0]}"; tail -5 "$D/u.log"; echo "FAIL: our array did not fail roles 1, 2"; exit 1; }
i=0 uloops=""
for d in ${devs[u]}; do
    echo "dd if=$d of=/tmp/ucopy$i bs=1M iflag=direct 2>/dev/null; losetup /dev/loop$((i + 4)) /tmp/ucopy$i"
    uloops+="/dev/loop$((i + 4)) "; i=$((i + 1))
done >> "$D/make.sh"
cat >> "$D/make.sh" <<JOB
mdadm --assemble --run /dev/md2 $uloops >/dev/null 2>&1 && echo "ours-plain-started"
mdadm --stop /dev/md2 >/dev/null 2>&1
mdadm --assemble --force --run /dev/md2 $uloops >/dev/null 2>&1 || echo "ours-force-failed"
echo "ours-forced \$(sha256sum < /dev/md2 | cut -d' ' -f1) \$(cat /sys/block/md2/md/degraded) \$(cd /sys/block/md2/md && echo rd*)"
JOB
# Writable --force against mdadm's writes: uraid's failed RAID5 above and
# a RAID5 whose roles 0 and 1 went stale at the same events (their images
# from before a rewrite of the same data: mdadm takes both, "we can't lose
# and we might gain") are copied (uw, sw) and `uraid serve --force`d on
# the host, writing their superblocks; the guest gives copies of the
# originals to mdadm --assemble --force --readonly (mdadm writes, the
# read-only kernel does not) and prints mdadm --examine's fields of each
# (events, role, array state, state: what mdadm's rules decide), which
# must be ours; and the kernel must assemble ours without --force, read
# what uraid reads, and find no mismatch in the full one (echo check).
fields() { mdadm --examine "$1" | sed -n -e 's/^ *Events : \(.*\)/events=\1/p' \
    -e 's/^ *Device Role : \(.*\)/role=\1/p' -e 's/^ *Array State : \([^ ]*\).*/astate=\1/p' \
    -e 's/^ *State : \(.*\)/state=\1/p' | tr '\n' ' '; }
add_images s 4 8M
read -r -a sf <<< "${files[s]}"
$URAID create --level=5 --raid-devices=4 --chunk=64 "${sf[@]}" >/dev/null 2>&1 ||
    { echo "FAIL: uraid create s"; exit 1; }
head -c "$usize" /dev/urandom > "$D/s.src"
$URAID serve --run "nbdcopy '$D/s.src' \"\$uri\"" "${sf[@]}" 2>/dev/null || { echo "FAIL: fill s"; exit 1; }
cp "${sf[0]}" "$D/s0.old"; cp "${sf[1]}" "$D/s1.old"
$URAID serve --run "nbdcopy '$D/s.src' \"\$uri\"" "${sf[@]}" 2>/dev/null || { echo "FAIL: rewrite s"; exit 1; }
cp "$D/s0.old" "${sf[0]}"; cp "$D/s1.old" "${sf[1]}"
# the guest's loop devices 0-7 are free again once md1 and md2 stop
cat >> "$D/make.sh" <<'JOB'
mdadm --stop /dev/md1 >/dev/null 2>&1; mdadm --stop /dev/md2 >/dev/null 2>&1
for i in 0 1 2 3 4 5 6 7; do losetup -d /dev/loop$i; done
fields() { mdadm --examine "$1" | sed -n -e 's/^ *Events : \(.*\)/events=\1/p' \
    -e 's/^ *Device Role : \(.*\)/role=\1/p' -e 's/^ *Array State : \([^ ]*\).*/astate=\1/p' \
    -e 's/^ *State : \(.*\)/state=\1/p' | tr '\n' ' '; }
JOB
md=3 loop=0
for set in u s; do
    add_images ${set}w 4 8M
    read -r -a src <<< "${files[$set]}"
    read -r -a dst <<< "${files[${set}w]}"
    for i in 0 1 2 3; do cp "${src[$i]}" "${dst[$i]}"; done
    $URAID serve --force --run 'nbdcopy "$uri" - | sha256sum | cut -d" " -f1' "${dst[@]}" \
        > "$D/${set}w.sha" 2> "$D/${set}w.log" || { cat "$D/${set}w.log"; echo "FAIL: serve --force ${set}w"; fail=1; }
    grep "forcing\|records it\|marking" "$D/${set}w.log" || true
    for i in 0 1 2 3; do echo "field $set $i $(fields "${dst[$i]}")"; done > "$D/${set}w.fields"
    i=0 loops=""
    for d in ${devs[$set]}; do
        echo "dd if=$d of=/tmp/f$set$i bs=1M iflag=direct 2>/dev/null; losetup /dev/loop$loop /tmp/f$set$i"
        loops+="/dev/loop$loop "; i=$((i + 1)) loop=$((loop + 1))
    done >> "$D/make.sh"
    cat >> "$D/make.sh" <<JOB
mdadm --assemble --force --readonly /dev/md$md $loops 2>&1 | sed 's/^/mdadm-$set: /'
mdadm --stop /dev/md$md >/dev/null 2>&1
JOB
    i=0
    for l in $loops; do echo "echo \"field $set $i \$(fields $l)\""; i=$((i + 1)); done >> "$D/make.sh"
    w=$((md + 1))
    cat >> "$D/make.sh" <<JOB
mdadm --assemble --run /dev/md$w ${devs[${set}w]} >/dev/null 2>&1 || echo "ours-$set-assemble-failed"
echo "ours-$set \$(sha256sum < /dev/md$w | cut -d' ' -f1) \$(cat /sys/block/md$w/md/degraded)"
echo check > /sys/block/md$w/md/sync_action
while [ "\$(cat /sys/block/md$w/md/sync_action)" != idle ]; do sleep 0.2; done
echo "ours-$set-mismatch \$(cat /sys/block/md$w/md/mismatch_cnt)"
mdadm --stop /dev/md$w >/dev/null 2>&1
JOB
    md=$((md + 2))
done

out=$(LINUX_PEER_TIMEOUT=300 "$PEER/run.sh" "$D/make.sh" "${imgs[@]}" 2>&1) || {
    echo "$out"; echo "FAIL: the kernel could not make the array"; exit 1; }
grep events <<< "$out"
grep -q create-failed <<< "$out" && { echo "$out"; echo "FAIL: mdadm --create"; exit 1; }

read -r -a ff <<< "${files[f]}"
before=$(sha256sum "${ff[@]}")
msg=$($URAID serve --readonly --run true "${ff[@]}" 2>&1) && { echo "FAIL: started without --force"; fail=1; }
grep -q "raid5 cannot run: 2 of 4 members in sync (missing or failed role 2,3)" <<< "$msg" ||
    { echo "FAIL: no reason without --force: $msg"; fail=1; }
$URAID serve --readonly --force --run 'nbdcopy "$uri" - | sha256sum | cut -d" " -f1' "${ff[@]}" \
    > "$D/ours" 2> "$D/log" || { cat "$D/log"; echo "FAIL: forced serve"; fail=1; }
grep -q "${imgs[2]} is stale by 1 events" "$D/log" ||
    { cat "$D/log"; echo "FAIL: the fresher lost member was not taken, or not named"; fail=1; }
grep -q "${imgs[3]} (events [0-9]*, newest [0-9]*) left out" "$D/log" ||
    { cat "$D/log"; echo "FAIL: the older lost member was not left out"; fail=1; }
[ "$before" = "$(sha256sum "${ff[@]}")" ] || { echo "FAIL: a forced read-only serve changed a member"; fail=1; }

i=0
for f in ${files[f]}; do
    grep -q "^copy $i $(sha256sum < "$f" | cut -d' ' -f1)\$" <<< "$out" ||
        { echo "$out"; echo "FAIL: the guest's copy $i of $f is not the image"; fail=1; }
    i=$((i + 1))
done
kernel=$(sed -n 's/^forced \([0-9a-f]*\) .*/\1/p' <<< "$out")
[ -n "$kernel" ] && [ "$kernel" = "$(cat "$D/ours")" ] || {
    echo "$out"; echo "FAIL: ours $(cat "$D/ours"), the kernel's forced assembly $kernel"; fail=1; }
grep -q "ours-plain-started" <<< "$out" && { echo "FAIL: the kernel started our failed RAID5 without --force"; fail=1; }
grep -q "ours-force-failed" <<< "$out" && { echo "$out"; echo "FAIL: mdadm --assemble --force of our failed RAID5"; fail=1; }
$URAID serve --readonly --force --run 'nbdcopy "$uri" - | sha256sum | cut -d" " -f1' "${uf[@]}" \
    > "$D/uours" 2> "$D/ulog" || { cat "$D/ulog"; echo "FAIL: forced serve of our failed RAID5"; fail=1; }
grep -q "^ours-forced $(cat "$D/uours") 1 rd0 rd2 rd3\$" <<< "$out" || {
    grep ours <<< "$out"; cat "$D/ulog"
    echo "FAIL: the kernel's forced assembly of our failed RAID5 is not ours ($(cat "$D/uours"), roles 0, 2, 3)"; fail=1; }
for set in u s; do
    grep "^mdadm-$set: " <<< "$out"
    diff <(grep "^field $set " <<< "$out") "$D/${set}w.fields" ||
        { echo "FAIL: $set: mdadm --assemble --force wrote other fields (<) than serve --force (>)"; fail=1; }
    grep -q "^ours-$set $(cat "$D/${set}w.sha") " <<< "$out" ||
        { grep "^ours-$set" <<< "$out"; echo "FAIL: $set: the kernel's plain assembly of ours reads other data than ours ($(cat "$D/${set}w.sha"))"; fail=1; }
    grep -q "^ours-$set-mismatch 0$" <<< "$out" ||
        { grep "^ours-$set-mismatch" <<< "$out"; echo "FAIL: $set: md's check of ours after --force"; fail=1; }
done
[ "$(cat "$D/sw.sha")" = "$(sha256sum < "$D/s.src" | cut -d' ' -f1)" ] ||
    { echo "FAIL: s: the forced array does not read what was written"; fail=1; }
[ $fail = 0 ] && echo "ok: writable serve --force writes what mdadm --assemble --force writes (events, roles, array state, state) for our failed RAID5 and two stale of one vintage; the kernel starts both without --force and checks them clean"
[ $fail = 0 ] && echo "ok: uraid's forced read-only RAID5 equals the kernel's mdadm --assemble --force ($kernel); our failed RAID5 too: refused, forced with role 2 back"
exit $fail
