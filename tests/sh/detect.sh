#!/bin/bash
# detect.sh — arrays whose metadata is gone: uraid's own RAID0 and RAID5
# (`uraid create`, every RAID5 layout over the cases, 3..6 members, chunks
# 16K..512K) filled with an ext4 file system that mkfs.ext4 -d made of
# real files, superblocks zeroed, members shuffled: `uraid detect` ranks
# the creation parameters first, the `--assume` line it prints serves
# what the array served before (sha256), and no image changes.  The
# kernel-made arrays are detect-kernel.sh's.  One case keeps a v1.0 superblock
# (at the end, the data from 0, as hardware controllers keep theirs).
source "$SRCDIR/tests/sh/lib.sh"
requires nbdcopy mkfs.ext4 jq sha256sum shuf
"$URAID" help | grep -q '^  detect ' || { echo "SKIP: uraid detect missing"; exit 77; }
cd "$tmp"
userve() { timeout -k 5 120 "$URAID" serve "$@"; }

# Real files: programs and text, 12 MiB of them (the smallest array holds 32).
mkdir files
total=0
for f in /usr/bin/* /usr/share/common-licenses/*; do
    [ -f "$f" ] && [ ! -L "$f" ] || continue
    s=$(stat -c %s "$f")
    [ "$s" -lt 1048576 ] && [ $((total + s)) -lt 10485760 ] || continue
    cp "$f" files/ 2>/dev/null && total=$((total + s))
done
seq 1 300000 > files/numbers.txt

# case LEVEL MEMBERS CHUNK LAYOUT MEMBER-SIZE [METADATA]
detect_case() {
    local level=$1 n=$2 chunk=$3 layout=$4 msize=$5 meta=${6:-1.2} i m got want
    local members=() lay=()
    rm -f m*.img fs.raw
    for ((i = 0; i < n; i++)); do members+=("m$i.img"); done
    truncate -s "$msize" "${members[@]}"
    [ "$level" = 5 ] && lay=(--layout="$layout")
    "$URAID" create --metadata="$meta" --level="$level" --chunk="$chunk" "${lay[@]}" --assume-clean --force \
        "${members[@]}" >/dev/null
    local off
    off=$("$URAID" examine m0.img | awk '/Data Offset/ { print $4 * 512 }')
    local size
    size=$(userve --readonly "${members[@]}" --run 'nbdinfo --size "$uri"' 2>/dev/null)
    truncate -s "$size" fs.raw
    mkfs.ext4 -q -F -d files fs.raw
    userve "${members[@]}" --run 'nbdcopy fs.raw "$uri"' 2>/dev/null
    want=$(sha256sum < fs.raw | cut -d' ' -f1)
    # the superblocks (v1.2: 4 KiB in; v1.0 near the end, as hardware
    # controllers keep theirs, the data from 0) zeroed
    for m in "${members[@]}"; do
        local sb
        sb=$("$URAID" examine "$m" | awk '/Super Offset/ { print $4 * 512 }')
        dd if=/dev/zero of="$m" bs=4096 seek=$((sb / 4096)) count=1 conv=notrunc status=none
    done
    sha256sum m*.img > before.sum
    mapfile -t shuffled < <(printf '%s\n' "${members[@]}" | shuf)
    "$URAID" detect --json "${shuffled[@]}" > det.json ||
        fail "raid$level n=$n chunk=$chunk $layout: detect failed"
    local name="raid$level n=$n chunk=$chunk${lay:+ $layout} v$meta"
    got=$(jq -r '.candidates[0] | "\(.level) \(.chunk) \(.layout) \(.offset) \(.order | join(","))"' det.json)
    local lname=null
    [ "$level" = 5 ] && lname=$layout
    want_geom="$level $((${chunk%K} * 1024)) $lname $off $(IFS=,; echo "${members[*]}")"
    [ "$got" = "$want_geom" ] || fail "$name: detect ranks first '$got', not '$want_geom'"
    # the command it prints opens what was written
    cmd=$(jq -r .command det.json)
    case "$cmd" in "uraid serve --readonly --assume "*) ;; *) fail "$name: command '$cmd'" ;; esac
    assume=$(jq -r '.candidates[0].assume' det.json)
    userve --readonly --assume "$assume" "${shuffled[@]}" --run 'nbdcopy "$uri" back.raw' \
        2>/dev/null
    # (without metadata the end is not known: v1.0's array ended before
    # the room kept for its superblock; what it held is compared)
    got=$(head -c "$size" back.raw | sha256sum | cut -d' ' -f1)
    [ "$got" = "$want" ] || fail "$name: the --assume export differs from what was written"
    sha256sum -c --quiet before.sum || fail "$name: an image changed"
    echo "ok $name: $(jq -r '"\(.scored) candidates in \(.seconds | . * 100 | floor / 100) s"' det.json)"
}

# a mirror is not taken for a RAID0: said, and nothing else
truncate -s 8M r1a.img r1b.img
"$URAID" create --level=1 --assume-clean --force r1a.img r1b.img >/dev/null
head -c 2M files/numbers.txt > r1.raw && truncate -s 2M r1.raw
userve r1a.img r1b.img --run 'nbdcopy r1.raw "$uri"' 2>/dev/null
for m in r1a.img r1b.img; do dd if=/dev/zero of=$m bs=4096 seek=1 count=1 conv=notrunc status=none; done
rc=0
"$URAID" detect r1b.img r1a.img >out.txt 2>err.txt || rc=$?
[ $rc = 1 ] && grep -q 'the members hold the same data.*a mirror (RAID1)' err.txt ||
    { cat out.txt err.txt; fail "detect on a RAID1: exit $rc"; }

# bytes with no structure, and an ext4 header that lies (a block per
# group, 2^32 blocks, sparse_super2): an answer or an error, never a crash
# or a hang
head -c 3M /dev/urandom > g0.img; head -c 3M /dev/urandom > g1.img; head -c 3M /dev/urandom > g2.img
printf '\xff\xff\xff\xff' | dd of=g0.img bs=1 seek=$((1024 + 4)) conv=notrunc status=none
printf '\x01\x00\x00\x00' | dd of=g0.img bs=1 seek=$((1024 + 0x20)) conv=notrunc status=none
printf '\x53\xef' | dd of=g0.img bs=1 seek=$((1024 + 0x38)) conv=notrunc status=none
printf '\x00\x02\x00\x00' | dd of=g0.img bs=1 seek=$((1024 + 0x5c)) conv=notrunc status=none
rc=0
timeout 120 "$URAID" detect g1.img g0.img g2.img >out.txt 2>err.txt || rc=$?
[ $rc -le 1 ] && ! grep -q 'Sanitizer\|runtime error' err.txt ||
    { cat err.txt; fail "detect on random bytes: exit $rc"; }

detect_case 0 3 16K - 24M
detect_case 5 3 64K right-asymmetric 24M
detect_case 5 4 128K left-asymmetric 32M
detect_case 0 5 512K - 24M
detect_case 5 5 32K right-symmetric 16M
detect_case 5 6 256K left-symmetric 16M
detect_case 5 4 64K left-symmetric 24M 1.0
echo PASS
