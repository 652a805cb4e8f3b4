#!/bin/bash
# assume-bad.sh — `--assume` (an array without metadata, by hand) on bad
# input: a missing key, a bad layout or level, order naming a member not
# given (or leaving one out), more members missing than the level can
# lose, offsets past the end, and a writable open: each a usage error (2)
# saying what is wrong, nothing opened, no image changed.  Then the good
# cases: a RAID5 built by `uraid create`, its superblocks zeroed, opened
# with --assume whole and with a member missing (degraded), by serve and
# probe, reads what was written; a linear array of unequal members.
source "$SRCDIR/tests/sh/lib.sh"
requires nbdcopy sha256sum
cd "$tmp"
userve() { timeout -k 5 60 "$URAID" serve "$@"; }
sha() { sha256sum "$@" | cut -d' ' -f1 | paste -sd' '; }

truncate -s 8M a.img b.img c.img
"$URAID" create --level=5 --chunk=64K --assume-clean --force a.img b.img c.img >/dev/null
off=$("$URAID" examine a.img | awk '/Data Offset/ { print $4 * 512 }')
head -c 4M /dev/urandom > data.raw
userve a.img b.img c.img --run 'nbdcopy data.raw "$uri"' 2>/dev/null
for m in a.img b.img c.img; do
    dd if=/dev/zero of=$m bs=4096 seek=1 count=1 conv=notrunc status=none
done
before=$(sha a.img b.img c.img)

# expect_bad MESSAGE ARGS...: serve --readonly exits 2 saying MESSAGE
expect_bad() {
    local msg=$1 rc=0; shift
    userve --readonly "$@" --run true >out.txt 2>err.txt || rc=$?
    [ $rc = 2 ] || { cat err.txt >&2; fail "'$*' exit $rc, want 2"; }
    grep -q -- "$msg" err.txt || { cat err.txt >&2; fail "'$*' does not say '$msg'"; }
    [ "$(sha a.img b.img c.img)" = "$before" ] || fail "'$*' changed a member"
}
M=(a.img b.img c.img)
expect_bad 'missing key level' --assume chunk=64K,order=a.img,b.img,c.img "${M[@]}"
expect_bad 'missing key order' --assume level=5,chunk=64K "${M[@]}"
expect_bad 'missing key chunk' --assume level=5,order=a.img,b.img,c.img "${M[@]}"
expect_bad "raid5 has no layout 'left-sideways'" \
    --assume level=5,chunk=64K,layout=left-sideways,order=a.img,b.img,c.img "${M[@]}"
expect_bad "unknown level 'raid7'" --assume level=raid7,chunk=64K,order=a.img,b.img,c.img "${M[@]}"
expect_bad "unknown key 'stripe'" --assume level=5,stripe=64K,order=a.img,b.img,c.img "${M[@]}"
expect_bad "'b.img' is not key=value" --assume level=5,chunk=64K,b.img "${M[@]}"
expect_bad 'not a power of two' --assume level=5,chunk=48K,order=a.img,b.img,c.img "${M[@]}"
expect_bad 'order names x.img, which is not a member given' \
    --assume level=5,chunk=64K,order=a.img,b.img,x.img "${M[@]}"
expect_bad 'member c.img is not in order' --assume level=5,chunk=64K,order=a.img,b.img,missing "${M[@]}"
expect_bad 'a.img is named twice' --assume level=5,chunk=64K,order=a.img,a.img,b.img a.img b.img
expect_bad 'raid5 cannot run with 2 of 3 members missing' \
    --assume level=5,chunk=64K,order=a.img,missing,missing a.img
expect_bad 'raid0 cannot run with 1 of 3 members missing' \
    --assume level=0,chunk=64K,order=a.img,b.img,missing a.img b.img
expect_bad 'raid6 takes at least 4 members' --assume level=6,chunk=64K,order=a.img,b.img,c.img "${M[@]}"
expect_bad 'bad offset' --assume level=5,chunk=64K,order=a.img,b.img,c.img,offset=1X "${M[@]}"
# past the end: the open fails (1), saying which member
rc=0
userve --readonly --assume level=5,chunk=64K,order=a.img,b.img,c.img,offset=9M "${M[@]}" \
    --run true 2>err.txt || rc=$?
[ $rc = 1 ] && grep -q 'a.img: offset .* is past its end' err.txt ||
    { cat err.txt >&2; fail "an offset past the end: exit $rc"; }
# writable: refused, whatever else is right
rc=0
userve --assume level=5,chunk=64K,order=a.img,b.img,c.img,offset=$off "${M[@]}" --run true \
    2>err.txt || rc=$?
[ $rc = 2 ] && grep -q 'read-only only.*add --readonly' err.txt ||
    { cat err.txt >&2; fail "a writable --assume was not refused (exit $rc)"; }
rc=0
"$URAID" probe --assume level=5,chunk=64K,order=a.img,b.img "${M[@]}" >/dev/null 2>err.txt || rc=$?
[ $rc = 2 ] && grep -q 'member c.img is not in order' err.txt || fail "probe took a bad --assume"

# the good cases: whole, and degraded (b.img missing: parity gives its chunks)
want=$(sha data.raw)
for order in a.img,b.img,c.img ./a.img,missing,c.img; do
    members=(a.img b.img c.img)
    # (a member may be spelled differently in order: the same file)
    [ $order = ./a.img,missing,c.img ] && members=(c.img a.img)
    spec=level=raid5,chunk=64K,layout=left-symmetric,order=$order,offset=$off
    userve --readonly --assume "$spec" "${members[@]}" --run 'nbdcopy "$uri" back.raw' 2>/dev/null
    [ "$(head -c 4M back.raw | sha256sum | cut -d' ' -f1)" = "$want" ] ||
        fail "--assume $order does not read what was written"
    "$URAID" probe --assume "$spec" "${members[@]}" > probe.txt
    grep -q '^└─assumed .* raid  *export .*raid5, 3 members.*assumed' probe.txt ||
        { cat probe.txt; fail "probe --assume $order does not show the array"; }
done
# a size: the array is made of that much of each member
spec=level=5,chunk=64K,order=a.img,b.img,c.img,offset=$off,size=2M
got=$(userve --readonly --assume "$spec" "${M[@]}" --run 'nbdinfo --size "$uri"' 2>/dev/null)
[ "$got" = $((4 * 1024 * 1024)) ] || fail "size=2M on 3 RAID5 members gives $got bytes, not 4 MiB"
[ "$(sha a.img b.img c.img)" = "$before" ] || fail "an image changed"

# linear of unequal members: each used whole from the offset
truncate -s 4M l0.img
truncate -s 6M l1.img
"$URAID" create --level=linear --force l0.img l1.img >/dev/null
loff=$("$URAID" examine l0.img | awk '/Data Offset/ { print $4 * 512 }')
userve l0.img l1.img --run 'nbdcopy "$uri" - < /dev/urandom' 2>/dev/null || true
userve --readonly l0.img l1.img --run 'nbdcopy "$uri" lin.raw' 2>/dev/null
dd if=/dev/zero of=l0.img bs=4096 seek=1 count=1 conv=notrunc status=none
dd if=/dev/zero of=l1.img bs=4096 seek=1 count=1 conv=notrunc status=none
userve --readonly --assume level=linear,order=l0.img,l1.img,offset=$loff l1.img l0.img \
    --run 'nbdcopy "$uri" back.raw' 2>/dev/null
cmp lin.raw back.raw || fail "linear --assume of unequal members differs from the array"

# the layers look inside: a GPT (sfdisk) on a RAID0 without metadata
if command -v sfdisk >/dev/null; then
    truncate -s 8M p0.img p1.img
    "$URAID" create --level=0 --chunk=64K --force p0.img p1.img >/dev/null
    poff=$("$URAID" examine p0.img | awk '/Data Offset/ { print $4 * 512 }')
    psize=$(userve --readonly p0.img p1.img --run 'nbdinfo --size "$uri"' 2>/dev/null)
    truncate -s "$psize" disk.raw
    printf 'label: gpt\n,4M\n,\n' | sfdisk -q disk.raw >/dev/null
    userve p0.img p1.img --run 'nbdcopy disk.raw "$uri"' 2>/dev/null
    for m in p0.img p1.img; do dd if=/dev/zero of=$m bs=4096 seek=1 count=1 conv=notrunc status=none; done
    spec=level=0,chunk=64K,order=p0.img,p1.img,offset=$poff
    "$URAID" probe --assume "$spec" p1.img p0.img > probe.txt
    grep -q 'assumed/p1 .*partition *export' probe.txt && grep -q 'assumed/p2 .*partition *export' probe.txt ||
        { cat probe.txt; fail "probe --assume does not find the GPT's partitions in the array"; }
    got=$(userve --readonly --assume "$spec" --export assumed/p1 p1.img p0.img \
        --run 'nbdinfo --size "$uri"' 2>/dev/null)
    [ "$got" = $((4 << 20)) ] || fail "assumed/p1 is $got bytes, not 4 MiB"
fi
echo PASS
