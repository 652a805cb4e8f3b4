#!/bin/bash
# probe-partitions.sh — partitions are exports named MEMBER/pN, byte for
# byte what nbdkit's partition filter gives for the same N (an independent
# reader), on tables made by sgdisk (GPT) and sfdisk (MBR with an extended
# partition and logicals); an md RAID1 whose members sit on partitions
# assembles from them; nothing is written.
. "$SRCDIR/tests/sh/lib.sh"
requires sgdisk sfdisk nbdkit nbdcopy python3
cd "$tmp"
nbdkit --dump-plugin file >/dev/null 2>&1 && nbdkit --filter=partition null --dump-plugin >/dev/null 2>&1 ||
    { echo "SKIP: nbdkit's partition filter missing"; exit 77; }

# fill IMG: random bytes everywhere, then the table on top
fill() { head -c "$2" /dev/urandom > "$1"; }
fill g.img 48M
sgdisk -Z g.img >/dev/null 2>&1 || true
sgdisk -n1:2048:+8M -t1:8300 -c1:boot -n2:0:+12M -t2:fd00 -n3:0:+4M -t3:8e00 g.img >/dev/null
fill m.img 48M
printf 'label: dos\nstart=2048, size=8M, type=83, bootable\nstart=18432, size=30M, type=5\nstart=20480, size=6M, type=83\nstart=34816, size=5M, type=fd\nsize=4M, type=82\n' |
    sfdisk -q m.img
before=$(sha256sum g.img m.img)
$URAID probe --json g.img m.img > probe.json 2>/dev/null || fail "probe failed"
sfdisk -J g.img > g.json
sfdisk -J m.img > m.json
# The partitions sfdisk lists (the extended container left out), as exports.
parts=$(python3 - probe.json g.json m.json <<'PY'
import json, sys
v = {x["name"]: x for x in json.load(open(sys.argv[1]))["volumes"]}
want = []
for f in sys.argv[2:]:
    t = json.load(open(f))["partitiontable"]
    for p in t["partitions"]:
        if t["label"] == "dos" and p["type"] in ("5", "f", "85"):
            continue
        img, n = p["node"].rsplit(".img", 1)
        want.append(f"{img}.img/p{n}")
        assert v[want[-1]]["size"] == p["size"] * t["sectorsize"], (want[-1], v[want[-1]])
got = sorted(n for n, x in v.items() if x["export"])
assert got == sorted(want), (got, want)
assert any(int(n.split("/p")[1]) >= 5 for n in want), "no logical partition in the test"
assert "Linux RAID" in v["g.img/p2"]["detail"] and '"boot"' in v["g.img/p1"]["detail"], v
print(" ".join(want))
PY
) || fail "probe: $(cat probe.json)"
for p in $parts; do
    img=${p%/p*} n=${p##*/p}
    ours=$($URAID serve --readonly --export "$img/p$n" --run 'nbdcopy "$uri" - | sha256sum' g.img m.img 2>/dev/null)
    theirs=$(nbdkit -U - file "$img" --filter=partition partition="$n" --run 'nbdcopy "$uri" - | sha256sum')
    [ -n "$ours" ] && [ "$ours" = "$theirs" ] || fail "$img/p$n: ours $ours, nbdkit's $theirs"
done
[ "$before" = "$(sha256sum g.img m.img)" ] || fail "a read-only serve changed an image"
echo "ok: the partitions sfdisk lists ($parts) equal nbdkit's partition filter"

# An md RAID1 on partition 2 of two GPT disks, one write through it.
cp g.img h.img
sgdisk -G h.img >/dev/null # new GUIDs: another disk
truncate -s 12M r0.img r1.img
$URAID create --level=1 --name=nas:2 r0.img r1.img >/dev/null
dd if=r0.img of=g.img bs=1M seek=9 conv=notrunc 2>/dev/null
dd if=r1.img of=h.img bs=1M seek=9 conv=notrunc 2>/dev/null
head -c 4M /dev/urandom > data
$URAID serve --export md/nas:2 --run 'nbdcopy data "$uri"' g.img h.img 2>/dev/null || fail "writable serve of md/nas:2"
got=$($URAID serve --readonly --run 'nbdcopy "$uri" - | head -c 4M | sha256sum' --export md/nas:2 g.img h.img 2>/dev/null)
[ "$got" = "$(sha256sum < data)" ] || fail "md on partitions: read $got"
# Only partition 2's bytes changed: the tables and the other partitions are as they were.
for n in 1 3; do
    a=$(nbdkit -U - file g.img --filter=partition partition=$n --run 'nbdcopy "$uri" - | sha256sum')
    b=$(nbdkit -U - file h.img --filter=partition partition=$n --run 'nbdcopy "$uri" - | sha256sum')
    [ "$a" = "$b" ] || fail "partition $n changed by a write to the array on partition 2"
done
sgdisk -v g.img | grep -q "No problems found" || fail "the GPT of g.img is damaged: $(sgdisk -v g.img)"
echo "ok: an md RAID1 on GPT partitions is written through and read back; the rest is untouched"
