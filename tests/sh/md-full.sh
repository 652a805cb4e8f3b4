#!/bin/bash
# md-full.sh — a member whose file system fills up (ENOSPC) under writes.
#  - One plain member: the client's write fails with "No space left on
#    device" (not a generic I/O error), and what was written before stays.
#  - RAID1 and RAID5 with one member on a small file system: that member
#    fails, as md fails a member whose write failed (it may have taken part
#    of the write, so its copy can no longer be trusted); the writes go on
#    to the others and succeed; every byte reads back; the superblocks
#    record it as faulty.  Once there is room again, `uraid add --force`
#    rebuilds it and `uraid check` finds the array consistent.
# The small file system is a tmpfs of 8 MiB: mounting it needs root (skip
# otherwise).
. "$(dirname "$0")/nbd-lib.sh"
requires nbdcopy nbdinfo cmp mount umount

small=$tmp/small
mkdir "$small"
mount -t tmpfs -o size=8M tmpfs "$small" 2>/dev/null || { echo "SKIP: cannot mount a tmpfs"; exit 77; }
cleanup_hooks+=('umount "$small"')

# One member: 24 MiB on 8 MiB of room.
truncate -s 24M "$small/one"
head -c 2M /dev/urandom > "$tmp/head"
"$URAID" serve --run "nbdcopy $tmp/head \"\$uri\"" "$small/one" 2>/dev/null ||
    fail "single: a 2 MiB write failed with room to spare"
head -c 20M /dev/urandom > "$tmp/big"
rc=0
out=$("$URAID" serve --run "nbdcopy $tmp/big \"\$uri\"" "$small/one" 2>&1) || rc=$?
[ "$rc" != 0 ] || fail "single: writing 20 MiB into 8 MiB of room succeeded"
grep -q "No space left on device" <<<"$out" || fail "single: the client was not told ENOSPC: $out"
rm -f "$small/one"

# RAID1 x2 and RAID5 x3, member 0 on the small file system.
for geometry in "1 2" "5 3 --chunk=64"; do
    read -r level disks opts <<<"$geometry"
    files=("$small/m0")
    truncate -s 24M "$small/m0"
    for i in $(seq 1 $((disks - 1))); do truncate -s 24M "$tmp/m$i"; files+=("$tmp/m$i"); done
    # shellcheck disable=SC2086
    "$URAID" create --level="$level" $opts "${files[@]}" >/dev/null 2>&1 || fail "create $geometry"
    "$URAID" serve --run "head -c \$(nbdinfo --size \"\$uri\") /dev/urandom > $tmp/data &&
        nbdcopy $tmp/data \"\$uri\" && nbdcopy \"\$uri\" $tmp/out" "${files[@]}" 2>"$tmp/log" ||
        fail "$geometry: writes failed with a member full: $(cat "$tmp/log")"
    cmp "$tmp/data" "$tmp/out" || fail "$geometry: data read back differs"
    grep -q "member 0 (.*) failed: No space left on device" "$tmp/log" ||
        fail "$geometry: the full member was not failed: $(cat "$tmp/log")"
    "$URAID" examine "${files[1]}" | grep -q "Array State : \.A" ||
        fail "$geometry: not recorded as faulty: $("$URAID" examine "${files[1]}")"

    # Room again: the member is rebuilt and the array is whole.
    mount -o remount,size=64M "$small" || fail "remount"
    "$URAID" add --force "$small/m0" "${files[@]:1}" >/dev/null 2>&1 || fail "$geometry: add back"
    out=$("$URAID" check "${files[@]}" 2>/dev/null) || fail "$geometry: check: $out"
    grep -q "agree" <<<"$out" || fail "$geometry: check: $out"
    "$URAID" serve --readonly --run "nbdcopy \"\$uri\" $tmp/out" "${files[@]}" 2>/dev/null ||
        fail "$geometry: read after the rebuild"
    cmp "$tmp/data" "$tmp/out" || fail "$geometry: data differs after the rebuild"
    rm -f "${files[@]}" "$tmp/data" "$tmp/out"
    mount -o remount,size=8M "$small" || fail "remount"
done
echo "ok: ENOSPC reaches the client; a full member fails and is rebuilt; nothing lost"
