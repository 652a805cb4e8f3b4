#!/bin/bash
# md-090.sh — md 0.90 members on the host, without a VM: the superblocks
# and bitmap of a raid1 the kernel made (mdadm 4.2 -e 0.90
# --bitmap=internal, taken from tests/fuzz/corpus-md090/md090-raid1-bitmap)
# placed at the end of two 4 MiB files, and the same written as a
# big-endian machine would have.
#   - examine shows them as mdadm does, and mdadm --examine agrees;
#   - serve names the array md/0 (its preferred minor), reads and writes
#     it; mdadm --examine still finds its checksum correct, events moved,
#     and a big-endian block stays big-endian;
#   - add, rebuild and grow are refused with one message, nothing written;
#   - a damaged block is refused naming the member and "md 0.90".
. "$(dirname "$0")/md-lib.sh"
requires python3 mdadm md5sum nbdcopy

seed=$SRCDIR/tests/fuzz/corpus-md090/md090-raid1-bitmap
# mk FILE N [be]: member N of the seed (flags byte, two 6-byte headers,
# two 8 KiB blobs) at 0.90's place on a 4 MiB FILE, optionally big-endian
mk() {
    python3 - "$seed" "$@" <<'PY'
import struct, sys
seed, path, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
be = len(sys.argv) > 4
data = open(seed, 'rb').read()
blob = data[13 + 8192 * n:13 + 8192 * (n + 1)]
sb, rest = blob[:4096], blob[4096:]
if be:
    w = list(struct.unpack('<1024I', sb))
    w[39], w[40], w[41], w[42] = w[40], w[39], w[42], w[41]
    sb = struct.pack('>1024I', *w)
with open(path, 'wb') as f:
    f.truncate(4 << 20)
    f.seek((4 << 20) - 65536)
    f.write(sb + rest)
PY
}
mk "$tmp/a0" 0; mk "$tmp/a1" 1
a=("$tmp/a0" "$tmp/a1")

out=$("$URAID" examine "$tmp/a0") || fail "examine: $out"
for want in "Version : 0.90.00" "UUID : e485c658:59c54204:8573e0d4:b4a65d8d" \
    "Preferred Minor : 0" "Raid Level : raid1" "Checksum : f7af64ca - correct" "Events : 1" \
    "Internal Bitmap : present" "Bitmap Status : 0 of 1 chunks dirty, up to date"; do
    grep -q "$want" <<<"$out" || fail "examine lacks '$want': $out"
done
grep -q "UUID : e485c658:59c54204:8573e0d4:b4a65d8d" <<<"$(mdadm --examine "$tmp/a0")" ||
    fail "mdadm shows another UUID"

md5sum "${a[@]}" > "$tmp/ro"
err=$("$URAID" serve --readonly --run 'nbdcopy "$uri" - | cmp -s - /dev/zero -n 4128768' "${a[@]}" 2>&1) ||
    fail "read-only serve: $err"
grep -q "md/0: assembled raid1" <<<"$err" || fail "not named md/0: $err"
md5sum --quiet -c "$tmp/ro" || fail "a read-only serve changed a member"

# Writable: what a client writes comes back; mdadm reads the superblocks.
head -c 1M /dev/urandom > "$tmp/data"
"$URAID" serve --run "nbdcopy '$tmp/data' \"\$uri\"" "${a[@]}" 2>"$tmp/log" || fail "serve: $(cat "$tmp/log")"
grep -q "keeping its write-intent bitmap" "$tmp/log" || fail "bitmap not kept: $(cat "$tmp/log")"
"$URAID" serve --readonly --run "nbdcopy \"\$uri\" - | head -c 1048576 | cmp -s - '$tmp/data'" "${a[@]}" 2>/dev/null ||
    fail "what was written does not come back"
for f in "${a[@]}"; do
    out=$(mdadm --examine "$f" 2>&1) || fail "mdadm --examine $f: $out"
    grep -q "Checksum : .* - correct" <<<"$out" && grep -q "State : clean" <<<"$out" ||
        fail "mdadm --examine $f after uraid wrote: $out"
    ev=$(sed -n 's/ *Events : //p' <<<"$out")
    [ "$ev" -gt 1 ] || fail "$f: events $ev did not move"
done
[ "$("$URAID" examine "$tmp/a0" | sed -n 's/ *Bitmap Events : //p')" = "$ev" ] ||
    fail "bitmap events behind the superblock's: $("$URAID" examine "$tmp/a0")"

# What uraid does not do to 0.90 arrays: one message, no file changed.
truncate -s 4M "$tmp/new"
refuse "md 0.90: adding or rebuilding a member is not supported" add "$tmp/new" "${a[@]}"
refuse "md 0.90: adding or rebuilding a member is not supported" rebuild "${a[@]}"
refuse "md 0.90: growing the array is not supported" grow --raid-devices=3 --add "$tmp/new" "${a[@]}"

# Big-endian: read, written back big-endian.
mk "$tmp/b0" 0 be; mk "$tmp/b1" 1 be
b=("$tmp/b0" "$tmp/b1")
out=$("$URAID" examine "$tmp/b0") || fail "examine big-endian: $out"
grep -q "Magic : a92b4efc (big-endian)" <<<"$out" && grep -q "Checksum : f7af64ca - correct" <<<"$out" &&
    grep -q "Events : 1$" <<<"$out" || fail "examine big-endian: $out"
"$URAID" serve --run "nbdcopy '$tmp/data' \"\$uri\"" "${b[@]}" 2>"$tmp/log" || fail "serve big-endian: $(cat "$tmp/log")"
[ "$(od -An -tx1 -j $((4128768)) -N4 "$tmp/b0" | tr -d ' ')" = a92b4efc ] || fail "no longer big-endian"
out=$("$URAID" examine "$tmp/b0")
grep -q "Checksum : .* - correct" <<<"$out" && grep -q "State : clean" <<<"$out" || fail "big-endian after a write: $out"
"$URAID" serve --readonly --run "nbdcopy \"\$uri\" - | head -c 1048576 | cmp -s - '$tmp/data'" "${b[@]}" 2>/dev/null ||
    fail "big-endian: what was written does not come back"

# A damaged block: refused, naming the member and the format.
mk "$tmp/a0" 0; mk "$tmp/a1" 1
printf '\x01' | dd of="$tmp/a0" bs=1 seek=$((4128768 + 200)) conv=notrunc 2>/dev/null
refuse "a0: md 0.90 superblock checksum mismatch" serve --readonly --run true "${a[@]}"
echo PASS
