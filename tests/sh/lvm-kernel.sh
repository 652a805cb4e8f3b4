#!/bin/bash
# lvm-kernel.sh — uraid reads the volume groups the real lvm2 makes.
# One linux-peer VM boot (tests/linux-peer): lvm2 in the guest makes PVs
# on whole disks, on GPT partitions (sgdisk) and on two md raid1 arrays
# (mdadm v1.2) under one VG as Synology's SHR does, with none, one or two
# metadata areas; in them a linear LV, striped LVs (2 and 3 stripes of
# 64 KiB), an LV of several segments over two PVs (lvcreate, then lvextend
# twice), and LVs uraid must refuse (a raid1 LV, a snapshot, a thin
# pool).  Random bytes are written into each visible LV and the guest
# prints its sha256.  On the host test_lvm (tests/unit/test_lvm.c) opens
# the images read-only (the GPT disk as its partitions), assembles the md
# arrays, runs lvm_assemble and must hash every LV the same and refuse the
# others by name.  The images must come out unchanged.
# Skips (77) when the linux-peer harness or a package it needs is missing.
MB=1
. "$(dirname "$0")/peer-lib.sh"

TEST_LVM=${BUILDDIR:-$SRCDIR/build}/tests/test_lvm
[ -x "$TEST_LVM" ] || { echo "FAIL: $TEST_LVM not built"; exit 1; }

add_images d 2 48M   # vda vdb: whole-disk PVs, VG vgd
add_images p 2 40M   # vdc: GPT, two partitions; vdd: whole disk; VG vgp
add_images m 4 24M   # vde..vdh: md0 = raid1(vde,vdf), md1 = raid1(vdg,vdh); VG vgshr

set -- ${devs[d]}; da=$1 db=$2
set -- ${devs[p]}; pa=$1 pb=$2
set -- ${devs[m]}; m0=$1 m1=$2 m2=$3 m3=$4

# Every LV is filled with random bytes (fast under TCG, and no two extents
# alike, so a misplaced one changes the sha256).
cat > "$D/job.sh" <<EOF
#!/bin/sh
fill() { dd if=/dev/urandom of=/dev/mapper/\$(echo \$1 | sed 's,-,--,g; s,/,-,') bs=1M count=\$2 oflag=direct 2>/dev/null; }
lv() { dmsetup mknodes; fill \$1 \$2; echo "lv \$1=\$(dd if=/dev/mapper/\$(echo \$1 | sed 's,-,--,g; s,/,-,') bs=1M 2>/dev/null | sha256sum | cut -d' ' -f1)"; }
sgdisk -n 1:2048:+12M -n 2:0:+16M $pa >/dev/null || echo "sgdisk failed"
mdadm --create /dev/md0 --run --metadata=1.2 --level=1 --assume-clean --raid-devices=2 $m0 $m1 >/dev/null 2>&1 || echo "md0 failed"
mdadm --create /dev/md1 --run --metadata=1.2 --level=1 --assume-clean --raid-devices=2 $m2 $m3 >/dev/null 2>&1 || echo "md1 failed"
# vgp's PVs: one with no metadata area, one with two (the second at its end).
for pv in $da $db ${pa}1 /dev/md0 /dev/md1; do pvcreate -q \$pv >/dev/null || echo "pvcreate \$pv failed"; done
pvcreate -q --metadatacopies 0 ${pa}2 >/dev/null || echo "pvcreate ${pa}2 failed"
pvcreate -q --metadatacopies 2 $pb >/dev/null || echo "pvcreate $pb failed"
vgcreate -q vgd $da $db >/dev/null && vgcreate -q vgp ${pa}1 ${pa}2 $pb >/dev/null && vgcreate -q -s 1M vgshr /dev/md0 /dev/md1 >/dev/null || echo "vgcreate failed"
lvcreate -q -n lin -L 8M vgd $da >/dev/null && lv vgd/lin 8
lvcreate -q -n str -i 2 -I 64k -L 12M vgd >/dev/null && lv vgd/str 12
lvcreate -q -n span -L 4M vgd $db >/dev/null && lvextend -q -L +4M vgd/span $da >/dev/null &&
	lvextend -q -L +8M vgd/span $db >/dev/null && lv vgd/span 16
lvcreate -q --type raid1 -m 1 -n mir -L 4M vgd >/dev/null || echo "raid1 lvcreate failed"
lvcreate -q -s -n snap -L 4M vgd/lin >/dev/null || echo "snapshot lvcreate failed"
modprobe dm-thin-pool 2>/dev/null
lvcreate -q --config 'global { thin_check_executable = "" }' --type thin-pool -n pool -L 4M vgd >/tmp/thin.log 2>&1 &&
	echo "made vgd/pool" || cat /tmp/thin.log
lvcreate -q -n str3 -i 3 -I 64k -L 9M vgp >/dev/null && lv vgp/str3 9
lvcreate -q -n lin -l 100%FREE vgp ${pa}2 >/dev/null && lv vgp/lin \$(lvs --noheadings --units m --nosuffix -o lv_size vgp/lin | cut -d. -f1)
lvcreate -q -n vol -l 100%FREE vgshr >/dev/null && lv vgshr/vol \$(lvs --noheadings --units m --nosuffix -o lv_size vgshr/vol | cut -d. -f1)
lvs -a -o lv_name,vg_name,segtype,devices 2>/dev/null
sync
vgchange -q -an vgd vgp vgshr >/dev/null || echo "vgchange -an failed"
mdadm --stop /dev/md0 /dev/md1 >/dev/null 2>&1
echo done
exit 0
EOF

run_peer "${imgs[@]}"
grep -q '^done$' <<< "$out" || { echo "$out"; echo "FAIL: the guest job did not finish"; exit 1; }
after_guest=$(sha256sum "${imgs[@]}")
fail=0
lvs=$(grep '^lv ' <<< "$out" | cut -d' ' -f2 | tr '\n' ' ')
nlv=$(wc -w <<< "$lvs")
[ "$nlv" -eq 6 ] || { echo "$out"; echo "FAIL: the guest made $nlv LVs, not 6"; fail=1; }
refused="vgd/mir vgd/snap vgd/pool"
grep -q '^made vgd/pool$' <<< "$out" ||
    { echo "$out"; echo "FAIL: the guest made no thin pool (its kernel needs dm-thin-pool: tests/linux-peer/build-initramfs.sh)"; fail=1; }

# The GPT disk goes in as its two partitions (sfdisk reads the table), so
# that the PVs on them are found as the kernel found them.
command -v sfdisk >/dev/null || { echo "skip: sfdisk missing (fdisk)"; exit 77; }
specs=()
for f in "${imgs[@]}"; do
    if [ "$f" = "${files[p]%% *}" ]; then
        while read -r start size; do
            specs+=("$f@$((start * 512)):$((size * 512))")
        done < <(sfdisk -d "$f" | sed -n 's/.*start= *\([0-9]*\), size= *\([0-9]*\),.*/\1 \2/p')
    else
        specs+=("$f")
    fi
done
LVM_IMAGES="${specs[*]}" LVM_EXPECT="$lvs" LVM_REFUSED="$refused" "$TEST_LVM" || fail=1
[ "$(sha256sum "${imgs[@]}")" = "$after_guest" ] || { echo "FAIL: the images changed on the host"; fail=1; }
[ $fail = 0 ] && echo "ok: uraid reads $nlv LVs the real lvm2 made, and refuses $refused"
exit $fail
