#!/bin/bash
# md-takeover.sh — `uraid grow --level` changes an md array's level without
# moving data, as the kernel's takeovers do (src/md/md_takeover.c), on
# arrays holding random data:
#   1 -> 5 -> 1   a two-device raid1 and back (left-symmetric, chunk 64K);
#   5 -> 6 -> 5   Q on a new device (--add, rebuilt; left-symmetric-6), and
#                 dropped again: that device is a spare of the raid5; a
#                 spare given takes Q (mdadm's add-then-grow);
#   0 -> 5 -> 0   parity-last with parity on a new device, and dropped: the
#                 parity device is left as it was;
#   10 -> 0       near-2: one device of each pair stays, the others are
#                 left as they were.
# A device that left, given with the others, is left out by serve (the
# freshest superblock decides, as mdadm's assembly) and not written.
# After each: mdadm --examine reads the level, layout, chunk and array
# state; the data reads back; `uraid check` finds parity (copies) agree.
# Refusals name the rule and change no file.
. "$(dirname "$0")/md-lib.sh"
requires nbdcopy nbdinfo mdadm cmp md5sum

SIZE=8M

# examine_is FILE FIELD VALUE: mdadm --examine shows "FIELD : VALUE"
examine_is() {
    local got
    got=$(mdadm --examine "$1" 2>&1 | sed -n "s/^ *$2 : //p")
    [ "$got" = "$3" ] || fail "$1: mdadm $2 '$got', want '$3'"
}

# geometry LEVEL LAYOUT CHUNK STATE FILES...: what mdadm sees on each file
geometry() {
    local level=$1 layout=$2 chunk=$3 state=$4 f
    shift 4
    for f in "$@"; do
        mdadm --examine "$f" 2>&1 | grep -q "Checksum : .* - correct" || fail "$f: mdadm checksum"
        examine_is "$f" "Raid Level" "$level"
        [ -z "$layout" ] || examine_is "$f" Layout "$layout"
        [ -z "$chunk" ] || examine_is "$f" "Chunk Size" "$chunk"
        examine_is "$f" "Array State" "$state ('A' == active, '.' == missing, 'R' == replacing)"
    done
}

# reads NAME FILES...: the array reads back NAME's data
reads() {
    local name=$1
    shift
    "$URAID" serve --readonly --run "nbdcopy \"\$uri\" $tmp/out" "$@" 2>/dev/null ||
        fail "$name: read back"
    cmp -s "$tmp/out" "$tmp/$name.data" || fail "$name: the array reads back other data"
    rm -f "$tmp/out"
}

# agrees FILES...: uraid check finds the array's redundancy consistent
agrees() {
    local out
    out=$("$URAID" check "$@" 2>&1) || fail "check: $out"
    grep -q "the copies agree" <<<"$out" || fail "check: $out"
}

# blank NAME LEVEL DISKS OPTS...: an array created, no data (for refusals)
blank() {
    local name=$1 level=$2 disks=$3 i
    shift 3
    files=()
    for i in $(seq 0 $((disks - 1))); do truncate -s $SIZE "$tmp/$name.$i"; files+=("$tmp/$name.$i"); done
    "$URAID" create --level="$level" "$@" "${files[@]}" >/dev/null 2>&1 || fail "$name: create"
}

grow() {
    out=$("$URAID" grow "$@" 2>&1) || fail "uraid grow $*: $out"
}

# 1 -> 5 -> 1
make_array m 1 2
r1=("${files[@]}")
grow --level=5 "${r1[@]}"
grep -q "raid1 -> raid5 left-symmetric, chunk 64K, 2 devices" <<<"$out" || fail "1 -> 5 said: $out"
geometry raid5 left-symmetric 64K AA "${r1[@]}"
reads m "${r1[@]}"
agrees "${r1[@]}"
grow --level=1 "${r1[@]}"
geometry raid1 "" "" AA "${r1[@]}"
reads m "${r1[@]}"
agrees "${r1[@]}"
echo "ok: raid1 -> raid5 -> raid1, two devices, nothing moved"

# 5 -> 6 -> 5
make_array p 5 3
r5=("${files[@]}")
truncate -s $SIZE "$tmp/p.q"
refuse "no new member takes it" grow --level=6 "${r5[@]}"
refuse "not a raid6 layout" grow --level=6 --layout=left-symmetricx --add "$tmp/p.q" "${r5[@]}"
grow --level=6 --add "$tmp/p.q" "${r5[@]}"
grep -q "the array is whole" <<<"$out" || fail "5 -> 6: Q not rebuilt: $out"
geometry raid6 left-symmetric-6 512K AAAA "${r5[@]}" "$tmp/p.q"
reads p "${r5[@]}" "$tmp/p.q"
agrees "${r5[@]}" "$tmp/p.q"
grow --level=5 "${r5[@]}" "$tmp/p.q"
grep -q "p.q is a spare" <<<"$out" || fail "6 -> 5 said: $out"
geometry raid5 left-symmetric 512K AAA "${r5[@]}" "$tmp/p.q"
examine_is "$tmp/p.q" "Device Role" spare
reads p "${r5[@]}"
agrees "${r5[@]}"
echo "ok: raid5 -> raid6 (Q rebuilt on a new device) -> raid5 (that device a spare)"

# mdadm's way: a spare first, then --level=6 --raid-devices=4; the spare takes Q
make_array r 5 3
truncate -s $SIZE "$tmp/r.s"
"$URAID" add --spare "$tmp/r.s" "${files[@]}" >/dev/null 2>&1 || fail "add --spare"
grow --level=6 --raid-devices=4 "${files[@]}" "$tmp/r.s"
grep -q "r.s, a spare, takes role 3" <<<"$out" || fail "the spare did not take Q: $out"
geometry raid6 left-symmetric-6 512K AAAA "${files[@]}" "$tmp/r.s"
agrees "${files[@]}" "$tmp/r.s"
echo "ok: a spare given takes Q (mdadm --add, then --grow --level=6 --raid-devices=4)"

# 0 -> 5 -> 0
make_array z 0 2
r0=("${files[@]}")
truncate -s $SIZE "$tmp/z.p"
refuse "parity-last" grow --level=5 --layout=left-symmetric --add "$tmp/z.p" "${r0[@]}"
grow --level=5 --add "$tmp/z.p" "${r0[@]}"
geometry raid5 parity-last 512K AAA "${r0[@]}" "$tmp/z.p"
reads z "${r0[@]}" "$tmp/z.p"
agrees "${r0[@]}" "$tmp/z.p"
sum=$(md5sum < "$tmp/z.p")
grow --level=0 "${r0[@]}" "$tmp/z.p"
geometry raid0 "" 512K AA "${r0[@]}"
[ "$(md5sum < "$tmp/z.p")" = "$sum" ] || fail "5 -> 0 wrote to the parity device that left"
reads z "${r0[@]}"
# given with the device that left: assembled from the freshest, as mdadm does,
# that device left out and not written, even by a writable start
reads z "${r0[@]}" "$tmp/z.p"
"$URAID" serve --run 'nbdinfo --size "$uri"' "${r0[@]}" "$tmp/z.p" > /dev/null 2>&1 ||
    fail "5 -> 0: a writable serve with the parity device that left"
[ "$(md5sum < "$tmp/z.p")" = "$sum" ] || fail "a serve wrote to the parity device that left"
echo "ok: raid0 -> raid5 parity-last (parity rebuilt on a new device) -> raid0 (it leaves untouched)"

# 10 -> 0
make_array t 10 4
sums=$(md5sum "${files[1]}" "${files[3]}")
grow --level=0 "${files[@]}"
geometry raid0 "" 512K AA "${files[0]}" "${files[2]}"
[ "$(md5sum "${files[1]}" "${files[3]}")" = "$sums" ] || fail "10 -> 0 wrote to a copy that left"
reads t "${files[0]}" "${files[2]}"
reads t "${files[@]}"
[ "$(md5sum "${files[1]}" "${files[3]}")" = "$sums" ] || fail "a serve wrote to a copy that left"
echo "ok: raid10 n2 -> raid0: roles 0 and 2 stay, 1 and 3 leave untouched"

# Refusals: the rule named, nothing changed.
blank s 5 3 --layout=left-symmetric
refuse "only parity-last" grow --level=0 "${files[@]}"
refuse "two-device raid5" grow --level=1 "${files[@]}"
refuse "another count moves data" grow --level=6 --raid-devices=5 --add "$tmp/p.q" "${files[@]}"
# a restripe's own rules (md_reshape_restripe), checked before a byte is written
refuse "give --array-size" grow --raid-devices=2 "${files[@]}"
refuse "power of two" grow --chunk=48 "${files[@]}"
refuse "not a raid5 layout" grow --layout=left-symmetric-6 "${files[@]}"
blank q 6 4
refuse "is a restripe" grow --level=5 --layout=right-asymmetric "${files[@]}"
blank f 10 4 --layout=f2
refuse "only near-2" grow --level=0 "${files[@]}"
refuse "no takeover between these levels" grow --level=5 "${files[@]}"
blank w 1 3
refuse "two-device raid1" grow --level=5 "${files[@]}"
refuse "no takeover between these levels" grow --level=6 "${files[@]}"
refuse "raid6 and raid10 only" grow --layout=left-symmetric "${files[@]}"
refuse "raid6 and raid10 only" grow --chunk=128 "${files[@]}"
echo "ok: transitions md does not make without moving data are refused, nothing written"
