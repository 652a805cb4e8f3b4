#!/bin/bash
# fwraid-bad.sh — damaged firmware RAID metadata is refused with a clear
# error naming IMSM or DDF and the member, and nothing is written.  The
# disks are the real metadata mdadm wrote in the linux-peer VM (the
# fuzz seeds tests/fuzz/corpus-fwraid/, unpacked into sparse images by
# make_corpus_fwraid.py: metadata only, no data); one field at a time is
# damaged by tests/sh/fwraid_meta.py, the checksum or CRC fixed after it
# as a writer would (but for the checksum cases).  Also: a writable open
# is refused, and a volume mid-migration is shown and refused.
. "$(dirname "$0")/lib.sh"
requires python3
fz=$SRCDIR/tests/fuzz
meta() { python3 "$SRCDIR/tests/sh/fwraid_meta.py" "$@"; }

# fresh NAME SEED: the seed's disks unpacked into $tmp/NAME/vd[a-d].img
fresh() {
    rm -rf "${tmp:?}/$1"
    mkdir "$tmp/$1"
    python3 "$fz/make_corpus_fwraid.py" unpack "$fz/corpus-fwraid/$2" "$tmp/$1" >/dev/null
    cd "$tmp/$1"
}

# The disks' sizes and modification times (to the nanosecond): any write
# changes them.
stamp() { stat -c '%n %s %y' vd?.img; }

# expect NAME PATTERN: `uraid probe` of the disks here says PATTERN, and
# the disks come out unchanged.
expect() {
    local before out
    before=$(stamp)
    out=$("$URAID" probe vd?.img 2>&1) || fail "$1: probe failed: $out"
    grep -q -- "$2" <<< "$out" || { echo "$out"; fail "$1: probe does not say '$2'"; }
    [ "$(stamp)" = "$before" ] || fail "$1: the disks changed"
    echo "ok: $1"
}

fresh good imsm-raid5-raid0
expect "IMSM volumes found" 'imsm/Volume0 .*IMSM RAID5, 4 disks, 64 KiB strip'
expect "IMSM RAID0 found" 'imsm/Volume1 .*IMSM RAID0, 4 disks, 32 KiB strip'

fresh sum imsm-raid5-raid0
meta imsm vdb.img flip
expect "IMSM checksum" 'vdb.img: IMSM: MPB checksum mismatch'

fresh ord imsm-raid5-raid0
meta imsm vdc.img ord 0 1 9
expect "IMSM member past the disk table" \
    'vdc.img: IMSM: volume Volume0: member 1 is disk 9, past the disk table.s 4'

fresh pba imsm-raid5-raid0
meta imsm vda.img pba 1 60000
expect "IMSM volume past the disk table's size" \
    'vda.img: IMSM: volume Volume1 extends past member 0 (disk /dev/vda)'

# The disk table claims more than the disk has: the member itself is short.
fresh short imsm-raid5-raid0
for d in a b c d; do
    for e in 0 1 2 3; do meta imsm vd$d.img blocks $e 200000; done
    meta imsm vd$d.img pba 1 60000
done
expect "IMSM volume past the disk" 'vda.img: IMSM: volume Volume1 extends past the disk'

# That container's disks were the VM's vde..vdh (their serials say so).
fresh migr imsm-raid10-raid1
for d in a b c d; do meta imsm vd$d.img migrate 1; done
mv vda.img vde.img && mv vdb.img vdf.img && mv vdc.img vdg.img && mv vdd.img vdh.img
expect() { # as above, over vd[e-h]
    local before out
    before=$(stamp)
    out=$("$URAID" probe vd?.img 2>&1) || fail "$1: probe failed: $out"
    grep -q -- "$2" <<< "$out" || { echo "$out"; fail "$1: probe does not say '$2'"; }
    [ "$(stamp)" = "$before" ] || fail "$1: the disks changed"
    echo "ok: $1"
}
expect "IMSM migration" 'imsm/Volume3 .*refused'
expect "IMSM migration reason" 'migration in progress (rebuild)'
expect "IMSM other volume still opens" 'imsm/Volume2 .*export'

fresh rw imsm-raid5-raid0
out=$("$URAID" serve --export imsm/Volume0 --run true vd?.img 2>&1) && fail "a writable serve of an IMSM volume started"
grep -q 'uraid: serve: imsm/Volume0: IMSM volumes open read-only only (uraid never writes firmware RAID metadata): use --readonly' <<< "$out" ||
    { echo "$out"; fail "writable serve: not the read-only message"; }
! grep -q LeakSanitizer <<< "$out" || { echo "$out"; fail "the refused serve leaked"; }
echo "ok: a writable serve is refused"

fresh dgood ddf-raid5-0-10-1
expect "DDF volumes found" 'ddf/VD0 .*DDF RAID5, 4 disks, 64 KiB strip'
expect "DDF RAID10 found" 'ddf/VD2 .*DDF RAID10, 4 disks, 64 KiB strip'

fresh dcrc ddf-raid5-0-10-1
meta ddf vdb.img flip 0
expect "DDF CRC" 'vdb.img: DDF: configuration record 0 CRC mismatch'

fresh dlba ddf-raid5-0-10-1
meta ddf vdd.img lba 0 0 190000
expect "DDF volume past the disk" 'vdd.img: DDF: virtual disk VD2 extends past member 2 (disk'

fresh drw ddf-raid5-0-10-1
out=$("$URAID" serve --export ddf/VD0 --run true vd?.img 2>&1) && fail "a writable serve of a DDF volume started"
grep -q 'ddf/VD0: DDF volumes open read-only only' <<< "$out" ||
    { echo "$out"; fail "writable DDF serve: not the read-only message"; }
echo "ok: a writable DDF serve is refused"

# A partition table in a volume is the volume's: with RAID5 from sector 0,
# the volume's first sector is its first disk's, but that disk is the
# container's and only the volume is cut into partitions.
if command -v sfdisk >/dev/null; then
    fresh part imsm-raid5-raid0
    echo 'start=2048, size=8192, type=83' | sfdisk -q vda.img >/dev/null
    expect "IMSM volume's partitions" 'imsm/Volume0/p1 .*MBR partition 1'
    ! "$URAID" probe vd?.img 2>&1 | grep -q 'vda.img/p1' || fail "the IMSM member was cut into partitions"
    echo "ok: the member disk is not"
fi
