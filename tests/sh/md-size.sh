#!/bin/bash
# md-size.sh — `uraid grow --size` changes the sectors each member of an
# md array uses, as mdadm --grow --size does: a RAID5 whose member files
# grew takes their new space (--size max, whole chunks): mdadm --examine
# sees the new used size and the array not clean (the new region is to be
# resynced, as md records it); the old data reads back; a writable start
# resyncs and `uraid check` finds the parity agrees.  Shrunk again, the
# array reads back its data.  Refused, changing no file: RAID0, far
# raid10, an array with a bitmap, a size the members do not hold,
# --array-size (md keeps none on disk), --size with another change.
. "$(dirname "$0")/md-lib.sh"
requires nbdcopy nbdinfo mdadm cmp md5sum

SIZE=8M

# used FILE: the sectors each member of a 3-device raid5 uses, from the
# array size mdadm shows (it shows Used Dev Size only when it differs)
used() { # KiB of the array, in sectors, over its two data devices
    local kib
    kib=$(mdadm --examine "$1" | sed -n 's/^ *Array Size : \([0-9]*\) .*/\1/p')
    echo $((kib * 2 / 2))
}
avail() { mdadm --examine "$1" | sed -n 's/^ *Avail Dev Size : \([0-9]*\) .*/\1/p'; }

make_array g 5 3 --chunk=64
old=$(used "${files[0]}")
# the new space holds garbage, so that parity there agrees only once resynced
for f in "${files[@]}"; do dd if=/dev/urandom of="$f" bs=1M seek=8 count=4 conv=notrunc 2>/dev/null; done
out=$("$URAID" grow --size max "${files[@]}" 2>&1) || fail "grow --size max: $out"
grep -q "resynced at the next start" <<<"$out" || fail "grow said: $out"
for f in "${files[@]}"; do
    u=$(used "$f") a=$(avail "$f")
    [ "$u" -gt "$old" ] && [ "$u" -le "$a" ] && [ $((u % 128)) = 0 ] && [ $((a - u)) -lt 128 ] ||
        fail "$f: used $u of $a sectors (was $old): want all of it in whole 64K chunks"
    mdadm --examine "$f" | grep -q "State : active" || fail "$f: not marked for resync"
done
"$URAID" serve --readonly --run "nbdcopy \"\$uri\" $tmp/out" "${files[@]}" 2>/dev/null || fail "read"
cmp -s -n "$(stat -c %s "$tmp/g.data")" "$tmp/out" "$tmp/g.data" || fail "the old data changed"
[ "$(stat -c %s "$tmp/out")" = $(((u * 2) * 512)) ] || fail "array of $(stat -c %s "$tmp/out") bytes, want $((u * 1024))"
"$URAID" serve --run true "${files[@]}" 2>/dev/null || fail "writable start (resync)"
out=$("$URAID" check "${files[@]}" 2>&1) || fail "check: $out"
grep -q "agree" <<<"$out" || fail "check: $out"
echo "ok: raid5 grown into its members' new space, resynced at the next start, parity agrees"

out=$("$URAID" grow --size $((old / 2)) "${files[@]}" 2>&1) || fail "grow --size back: $out"
[ "$(used "${files[0]}")" = "$old" ] || fail "shrunk to $(used "${files[0]}"), want $old"
"$URAID" serve --readonly --run "nbdcopy \"\$uri\" $tmp/out" "${files[@]}" 2>/dev/null || fail "read"
cmp -s "$tmp/out" "$tmp/g.data" || fail "the data read back after the shrink differs"
echo "ok: shrunk back to the old size, the data reads back"

refuse "holds .* KiB of data at most" grow --size 100M "${files[@]}"
refuse "keeps no array size" grow --array-size 4M "${files[@]}"
refuse "give it alone" grow --size max --level=6 "${files[@]}"
make_array z 0 2
refuse "no size to change" grow --size max "${files[@]}"
make_array f 10 2 --layout=f2
refuse "far copies" grow --size max "${files[@]}"
make_array b 1 2 --bitmap=internal
refuse "bitmap" grow --size max "${files[@]}"
echo "ok: raid0, far raid10, a bitmap, too large, --array-size: refused, nothing written"
