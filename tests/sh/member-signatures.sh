#!/bin/bash
# member-signatures.sh — every command that writes a new member refuses one
# that holds something a user may want kept, names what it found, and
# writes nothing: create, add and grow --add over an ext4 file system
# (mkfs.ext4), a GPT (sfdisk) and an LVM2 physical volume (pvcreate, on a
# loop device); luks-format --batch (which asks nothing, as cryptsetup)
# says what it overwrites.  A case whose tool is missing is skipped; the
# test skips (77) when all are.
set -euo pipefail

D=$(mktemp -d)
loop=""
cleanup() {
    [ -z "$loop" ] || losetup -d "$loop" 2>/dev/null || true
    rm -rf "$D"
}
trap cleanup EXIT
cd "$D"
fail=0
export LVM_SUPPRESS_FD_WARNINGS=1

# refuse WHAT WANT CMD...: fails, says WANT, and c.img is unchanged
refuse() {
    local what=$1 want=$2 out before
    shift 2
    before=$(sha256sum < c.img)
    if out=$("$@" 2>&1); then echo "FAIL: $what: succeeded"; fail=1; return; fi
    grep -q -- "$want" <<< "$out" || { echo "FAIL: $what: no '$want' in: $out"; fail=1; return; }
    [ "$before" = "$(sha256sum < c.img)" ] || { echo "FAIL: $what: c.img changed"; fail=1; return; }
    echo "ok: $what"
}

make_ext4() { mkfs.ext4 -q -F c.img; }
make_gpt() { echo 'label: gpt' | sfdisk -q c.img >/dev/null; echo ',,L' | sfdisk -q --append c.img >/dev/null; }
make_lvm2() {
    loop=$(losetup -f --show c.img) || return 1
    pvcreate -q -y "$loop" >/dev/null 2>&1 || { losetup -d "$loop"; loop=""; return 1; }
    losetup -d "$loop"; loop=""
}

# kind | tool | maker | what the message names
cases=(
    "ext4|mkfs.ext4|make_ext4|ext2/3/4 file system"
    "GPT|sfdisk|make_gpt|GPT partition table"
    "LVM2|pvcreate|make_lvm2|LVM2 physical volume"
)
ran=0
for c in "${cases[@]}"; do
    IFS='|' read -r kind tool maker want <<< "$c"
    command -v "$tool" >/dev/null || { echo "skip: $kind: $tool missing"; continue; }
    rm -f a.img b.img c.img
    truncate -s 32M a.img b.img c.img
    $URAID create --level=1 a.img b.img >/dev/null
    if ! $maker; then echo "skip: $kind: $tool failed here"; continue; fi
    ran=1
    refuse "create over $kind" "c.img already holds an* $want" \
        $URAID create --level=1 c.img missing
    refuse "add over $kind" "c.img already holds an* $want" $URAID add c.img a.img b.img
    refuse "grow --add over $kind" "c.img already holds an* $want" \
        $URAID grow --raid-devices 3 --add c.img a.img b.img
    out=$($URAID luks-format --batch --key-file <(printf pw) --pbkdf-force-iterations 1000 \
        --pbkdf pbkdf2 c.img 2>&1) || { echo "FAIL: luks-format $kind: $out"; fail=1; continue; }
    grep -q "c.img holds an* $want; overwriting it" <<< "$out" ||
        { echo "FAIL: luks-format over $kind does not say so: $out"; fail=1; continue; }
    echo "ok: luks-format over $kind says what it overwrites"
done
# --force overrides (c.img now holds LUKS)
$URAID add --force --no-rebuild c.img a.img b.img >/dev/null 2>&1 ||
    { echo "FAIL: add --force"; fail=1; }
[ $ran = 1 ] || { echo "skip: none of mkfs.ext4, sfdisk, pvcreate works here"; exit 77; }
exit $fail
