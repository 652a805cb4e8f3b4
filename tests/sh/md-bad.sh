#!/bin/bash
# md-bad.sh — bad input to create, examine and serve gets a clear message
# and changes no byte of any member unless the user asked for it: members
# without or with a damaged superblock, members of two arrays, a stale
# member, a truncated one, too few members, and create over members that
# hold a filesystem, a LUKS header or a partition table.
set -euo pipefail

command -v nbdinfo >/dev/null || { echo "skip: nbdinfo missing"; exit 77; }
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
cd "$D"
fail=0
mk() { for f in "$@"; do rm -f "$f"; truncate -s 4M "$f"; done; }
hashes() { sha256sum "$@"; }
# expect_fail "what" "message part" cmd...: fails, says it, writes nothing
expect_fail() {
    local what=$1 msg=$2; shift 2
    local before after out
    before=$(hashes ./*.img)
    if out=$("$@" 2>&1); then echo "FAIL: $what: succeeded"; fail=1; return; fi
    after=$(hashes ./*.img)
    grep -q -- "$msg" <<< "$out" || { echo "FAIL: $what: no '$msg' in: $out"; fail=1; }
    [ "$before" = "$after" ] || { echo "FAIL: $what: a member changed"; fail=1; }
    echo "ok: $what"
}
size() { $URAID serve "$@" --run 'nbdinfo --size "$uri"' 2>/dev/null; }

mk a.img b.img c.img d.img
expect_fail "examine of a blank member" "no md superblock" $URAID examine a.img
expect_fail "check of two blank members" "separate volumes" $URAID check a.img b.img

$URAID create --level=1 a.img b.img >/dev/null
$URAID create --level=1 c.img d.img >/dev/null
expect_fail "check of members of two arrays" "separate volumes" $URAID check a.img c.img b.img d.img
# serve exports both, each under its name, and nothing as ""
before=$(hashes ./*.img)
out=$($URAID serve --readonly --run 'nbdinfo --list "$uri"; nbdinfo --size "$uri"' a.img c.img b.img d.img 2>&1) || true
[ "$(grep -c '^export="md/' <<< "$out")" = 2 ] || { echo "FAIL: two arrays, not two exports: $out"; fail=1; }
grep -q "no export named ''" <<< "$out" || { echo "FAIL: \"\" answered with two exports: $out"; fail=1; }
[ "$before" = "$(hashes ./*.img)" ] || { echo "FAIL: serve of two arrays changed a member"; fail=1; }
echo "ok: members of two arrays are two exports"
expect_fail "raid1 missing a member" "--degraded" $URAID serve --run true a.img
expect_fail "create over md members" "already holds an md superblock" $URAID create --level=0 a.img b.img

# a damaged checksum: examine shows it, assembly refuses
cp b.img b.bak
printf '\x01' | dd of=b.img bs=1 seek=$((4096 + 200)) conv=notrunc 2>/dev/null
expect_fail "examine of a damaged superblock" "checksum mismatch" $URAID examine b.img
out=$($URAID examine b.img 2>/dev/null || true)
grep -q 'Checksum : [0-9a-f]* - expected' <<< "$out" || { echo "FAIL: examine does not show the expected checksum"; fail=1; }
expect_fail "serve with a damaged superblock" "checksum mismatch" $URAID serve --run true a.img b.img
mv b.bak b.img

# a truncated member
cp b.img b.bak
truncate -s 3M b.img
expect_fail "serve with a truncated member" "truncated" $URAID serve --run true a.img b.img
mv b.bak b.img

# a stale member: written degraded without b, b is left out afterwards
before_b=$(sha256sum < b.img)
$URAID serve --degraded --run 'nbdinfo --size "$uri" >/dev/null' a.img 2>/dev/null
head -c 65536 /dev/urandom > data
$URAID serve --degraded --run 'nbdcopy data "$uri"' a.img 2>/dev/null
[ "$before_b" = "$(sha256sum < b.img)" ] || { echo "FAIL: degraded serve wrote to the absent member"; fail=1; }
out=$($URAID serve --readonly --run 'nbdinfo --size "$uri"' b.img a.img 2>&1) || true
grep -q "stale" <<< "$out" || { echo "FAIL: stale member not reported: $out"; fail=1; }
$URAID examine a.img | grep -q 'Array State : A\.' || { echo "FAIL: survivor does not record the missing member"; fail=1; }
echo "ok: stale member left out"

# --readonly changes no byte, even when a client tries to write
before=$(hashes ./*.img)
$URAID serve --readonly --run 'nbdcopy "$uri" - >/dev/null; nbdcopy data "$uri" 2>/dev/null; true' a.img b.img 2>/dev/null
[ "$before" = "$(hashes ./*.img)" ] || { echo "FAIL: --readonly serve changed a member"; fail=1; }
echo "ok: --readonly writes nothing"

# raid0 with a member missing, and 'missing' at create
mk e.img f.img g.img
$URAID create --level=0 e.img f.img >/dev/null
expect_fail "raid0 missing a member" "needs all 2" $URAID serve --degraded --run true e.img
$URAID create --level=1 g.img missing >/dev/null
$URAID examine g.img | grep -q 'Array State : A\.' || { echo "FAIL: degraded create"; fail=1; }
[ "$(size --readonly g.img)" -gt 0 ] || { echo "FAIL: degraded-created raid1 does not serve"; fail=1; }
expect_fail "raid0 with 'missing'" "redundant level" $URAID create --level=0 --force e.img missing

# create refuses foreign signatures, and --force overrides
sig() { # file offset bytes
    mk "$1"; printf "$3" | dd of="$1" bs=1 seek="$2" conv=notrunc 2>/dev/null
}
sig h.img 0 'LUKS\xba\xbe';      expect_fail "create over LUKS" "LUKS header" $URAID create --level=1 h.img e.img
sig h.img 1080 '\x53\xef';       expect_fail "create over ext4" "ext2/3/4" $URAID create --level=0 h.img
sig h.img 0 'XFSB';              expect_fail "create over XFS" "XFS" $URAID create --level=0 h.img
sig h.img 65600 '_BHRfS_M';      expect_fail "create over btrfs" "btrfs" $URAID create --level=0 h.img
sig h.img 4086 'SWAPSPACE2';     expect_fail "create over swap" "swap" $URAID create --level=0 h.img
sig h.img 510 '\x55\xaa';        expect_fail "create over an MBR" "partition table" $URAID create --level=0 h.img
sig h.img 512 'EFI PART';        expect_fail "create over GPT" "GPT" $URAID create --level=0 h.img
sig h.img 4186112 '\xfc\x4e\x2b\xa9'; expect_fail "create over md v1.0" "md superblock (v1.0)" $URAID create --level=0 h.img
sig h.img 4128768 '\xfc\x4e\x2b\xa9'; expect_fail "create over md 0.90" "md superblock (0.90)" $URAID create --level=0 h.img
$URAID create --level=linear --force h.img >/dev/null || { echo "FAIL: --force"; fail=1; }
# v1.0 keeps its superblock at the member's end: damaged there, examine
# and serve name the version and the checksum
mk i.img j.img
$URAID create --level=1 --metadata=1.0 i.img j.img >/dev/null
printf '\x01' | dd of=j.img bs=1 seek=$((4186112 + 200)) conv=notrunc 2>/dev/null
expect_fail "examine of a damaged v1.0 superblock" "j.img: md v1.0 superblock checksum mismatch" $URAID examine j.img
expect_fail "serve with a damaged v1.0 superblock" "j.img: md v1.0 superblock checksum mismatch" $URAID serve --run true i.img j.img
expect_fail "create --metadata=0.90" "--metadata is 1.0, 1.1 or 1.2" $URAID create --level=1 --metadata=0.90 --force i.img j.img
expect_fail "usage: no level" "--level is required" $URAID create a.img
exit $fail
