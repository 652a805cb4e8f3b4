#!/bin/bash
# probe-nas.sh — the disks of a Synology-like NAS, made by the Linux kernel
# in a linux-peer VM (tests/linux-peer), open in uraid read-only, without
# root, without changing a byte: three GPT disks; md0, a RAID1 with a 0.90
# superblock on the first partitions (the system); md2, a RAID5 v1.2 on the
# third; md3, a RAID1 v1.2 on the fourth partitions of two disks (what SHR
# adds for mixed sizes); an LVM2 volume group over md2 and md3 with one
# logical volume spanning both; ext4 on md0 and on the LV.  `uraid serve
# --readonly` with the three images exports md/0 and vg1000/lv, each equal
# (md5) to the kernel's block device, e2fsck finds the file systems
# clean, and `uraid probe` shows the tree.
# Skips (77) when the linux-peer harness or a package it needs is missing.
MB=1
. "$(dirname "$0")/peer-lib.sh"
for t in mdadm sgdisk lvm mkfs.ext4 e2fsck python3; do
    command -v $t >/dev/null || { echo "skip: $t missing"; exit 77; }
done
fail=0
for d in a b c; do truncate -s 112M "$D/$d.img"; done
imgs=("$D/a.img" "$D/b.img" "$D/c.img")
cat > "$D/job.sh" <<'JOB'
#!/bin/sh
set -e
for d in vda vdb vdc; do
    sgdisk -n1:2048:+24M -t1:fd00 -n2:0:+8M -t2:fd00 -n3:0:+40M -t3:fd00 /dev/$d >/dev/null
done
sgdisk -n4:0:+24M -t4:fd00 /dev/vda >/dev/null
sgdisk -n4:0:+24M -t4:fd00 /dev/vdb >/dev/null
# no udev: the partition nodes, as the kernel numbers them
for d in vda vdb vdc; do for n in 1 2 3 4; do
    [ -e /sys/block/$d/${d}$n ] || continue
    [ -e /dev/${d}$n ] || mknod /dev/${d}$n b $(cat /sys/block/$d/${d}$n/dev | tr : ' ')
done; done
mdadm --create /dev/md0 --run -e 0.90 --assume-clean --level=1 -n3 /dev/vda1 /dev/vdb1 /dev/vdc1 >/dev/null 2>&1
mdadm --create /dev/md2 --run -e 1.2 --assume-clean --level=5 -n3 --chunk=64 --name=DiskStation:2 /dev/vda3 /dev/vdb3 /dev/vdc3 >/dev/null 2>&1
mdadm --create /dev/md3 --run -e 1.2 --assume-clean --level=1 -n2 --name=DiskStation:3 /dev/vda4 /dev/vdb4 >/dev/null 2>&1
# --assume-clean: the disks are zeros, so the copies and the parity agree
# already; no resync of 240 MiB under TCG (the state a NAS's resync ends in)
mkfs.ext4 -q -F /dev/md0
pvcreate -q /dev/md2 /dev/md3
vgcreate -q vg1000 /dev/md2 /dev/md3
lvcreate -q -l 100%FREE -n lv vg1000
dmsetup mknodes
mkfs.ext4 -q -F /dev/mapper/vg1000-lv
mkdir -p /mnt/a /mnt/b
mount /dev/md0 /mnt/a; mount /dev/mapper/vg1000-lv /mnt/b
dd if=/dev/urandom of=/mnt/a/etc.bin bs=1M count=3 2>/dev/null
dd if=/dev/urandom of=/mnt/b/photos.bin bs=1M count=50 2>/dev/null
umount /mnt/a /mnt/b
echo "segments $(lvs --noheadings --segments -o seg_count vg1000/lv | tr -d ' ')"
echo "sha md/0 $(md5sum < /dev/md0 | cut -d' ' -f1)"
echo "sha vg1000/lv $(md5sum < /dev/mapper/vg1000-lv | cut -d' ' -f1)"
vgchange -q -an vg1000 >/dev/null
mdadm --stop /dev/md0 /dev/md2 /dev/md3 >/dev/null 2>&1
JOB
run_peer "${imgs[@]}"
grep -E "^(segments|sha) " <<< "$out" || { echo "$out"; echo "FAIL: the guest made no NAS"; exit 1; }
[ "$(sed -n 's/^segments //p' <<< "$out")" = 2 ] || { echo "FAIL: the LV does not span md2 and md3"; fail=1; }

before=$(sha256sum "${imgs[@]}")
cd "$D"
$URAID probe a.img b.img c.img > tree 2>/dev/null || { echo "FAIL: probe"; fail=1; }
cat tree
$URAID probe --json a.img b.img c.img > probe.json 2>/dev/null
python3 - probe.json <<'PY' || { echo "FAIL: the tree is not the NAS's: $(cat probe.json)"; fail=1; }
import json, sys
v = {x["name"]: x for x in json.load(open(sys.argv[1]))["volumes"]}
exports = sorted(n for n, x in v.items() if x["export"])
assert exports == ["a.img/p2", "b.img/p2", "c.img/p2", "md/0", "vg1000/lv"], exports
assert sorted(v["vg1000/lv"]["from"]) == ["md/DiskStation:2", "md/DiskStation:3"], v["vg1000/lv"]
assert sorted(v["md/DiskStation:3"]["from"]) == ["a.img/p4", "b.img/p4"], v["md/DiskStation:3"]
assert "ext2/3/4" in v["vg1000/lv"]["holds"] and "ext2/3/4" in v["md/0"]["holds"], v
PY
for e in md/0 vg1000/lv; do
    want=$(sed -n "s|^sha $e ||p" <<< "$out")
    $URAID serve --readonly --export "$e" --run 'nbdcopy "$uri" vol.img' a.img b.img c.img 2>/dev/null ||
        { echo "FAIL: serve --export $e"; fail=1; continue; }
    got=$(md5sum < vol.img | cut -d' ' -f1)  # md5 in the guest: sha256 is twice as slow under TCG
    if [ "$got" = "$want" ]; then echo "ok: $e equals the kernel's ($got)"; else
        echo "FAIL: $e: ours $got, the kernel's $want"; fail=1; fi
    e2fsck -fn vol.img >/dev/null 2>&1 || { echo "FAIL: e2fsck finds $e's file system damaged"; fail=1; }
    rm -f vol.img
done
[ "$before" = "$(sha256sum "${imgs[@]}")" ] || { echo "FAIL: opening the NAS changed a disk"; fail=1; }
[ $fail = 0 ] && echo "ok: a Synology-like NAS (GPT, md 0.90 + 1.2, LVM2 over two arrays, ext4) opens read-only, byte for byte"
exit $fail
