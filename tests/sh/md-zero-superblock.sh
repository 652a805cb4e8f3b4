#!/bin/bash
# md-zero-superblock.sh — `uraid zero-superblock` against mdadm
# --zero-superblock, on members full of random bytes so that any byte
# changed shows:
#   - md 1.2, 1.1, 1.0 (one with an internal bitmap) made by `uraid create`,
#     and the 0.90 raid1 member mdadm and the kernel made (the md090 fuzz
#     seed): uraid's result is byte for byte mdadm's on a copy (cmp),
#     mdadm --examine finds no superblock on it, and every changed byte lies
#     in the superblock's block;
#   - a member with no md superblock: "Unrecognised md component device",
#     exit 1, and with a good member before it neither is written;
#     --force goes on quietly, exit 0, nothing written;
#   - a member given twice, and a member of an array being served (its lock),
#     are refused with nothing written.
. "$(dirname "$0")/lib.sh"
requires mdadm python3 cmp sha256sum
cd "$tmp"

rnd() { head -c 8M /dev/urandom > "$1"; }
# changed_within A B FROM LEN: every byte where A and B differ is in [FROM, FROM+LEN)
changed_within() {
    { cmp -l "$1" "$2" || true; } | awk -v lo="$3" -v hi="$(($3 + $4))" \
        '{ if ($1 - 1 < lo || $1 - 1 >= hi) bad++ } END { exit bad > 0 }'
}
# same OUR THEIRS ORIG FROM LEN WHAT: the checks every version shares
same() {
    cmp -s "$1" "$2" || fail "$6: uraid's zeroing differs from mdadm's: $(cmp "$1" "$2")"
    out=$(mdadm --examine "$1" 2>&1) && fail "$6: mdadm --examine still finds: $out"
    grep -q "No md superblock detected" <<< "$out" || fail "$6: mdadm --examine: $out"
    changed_within "$3" "$1" "$4" "$5" || fail "$6: bytes outside the superblock changed"
    cmp -s "$3" "$1" && fail "$6: nothing was zeroed"
    echo "ok: $6: as mdadm --zero-superblock, only the superblock's block"
}

size=$((8 << 20))
for v in 1.2 1.1 1.0 1.0+bitmap; do
    rnd a; rnd b
    opts=(--metadata="${v%+bitmap}")
    [ "$v" = "${v%+bitmap}" ] || opts+=(--bitmap=internal)
    out=$("$URAID" create --force --assume-clean "${opts[@]}" --level=1 a b 2>&1) ||
        fail "create $v: $out"
    mdadm --examine a >/dev/null 2>&1 || fail "$v: mdadm does not see the superblock"
    case ${v%+bitmap} in
    1.2) at=4096 ;;
    1.1) at=0 ;;
    1.0) at=$(( ((size / 512 - 16) & ~7) * 512 )) ;;
    esac
    cp a ours; cp a theirs
    "$URAID" zero-superblock ours 2>/dev/null || fail "$v: zero-superblock failed"
    mdadm --zero-superblock theirs 2>/dev/null || fail "$v: mdadm --zero-superblock failed"
    same ours theirs a "$at" 512 "md $v"
done

# The 0.90 raid1 member mdadm 4.2 -e 0.90 --bitmap=internal and the kernel
# wrote (its superblock and bitmap), placed on random bytes as on a disk.
python3 - "$SRCDIR/tests/fuzz/corpus-md090/md090-raid1-bitmap" a <<'PY'
import os, sys
data = open(sys.argv[1], 'rb').read()
with open(sys.argv[2], 'wb') as f:
    f.write(os.urandom(8 << 20))
    f.seek((8 << 20) - 65536)
    f.write(data[13:13 + 8192])
PY
mdadm --examine a 2>/dev/null | grep -q "Version : 0.90" || fail "0.90: mdadm does not see the seed"
cp a ours; cp a theirs
"$URAID" zero-superblock ours 2>/dev/null || fail "0.90: zero-superblock failed"
mdadm --zero-superblock theirs 2>/dev/null || fail "0.90: mdadm --zero-superblock failed"
same ours theirs a $((size - 65536)) 4096 "md 0.90 (mdadm's)"

# Mistakes: one line naming the member, a non-zero exit, no byte written.
rnd none; rnd a; rnd b
"$URAID" create --force --assume-clean --level=1 a b >/dev/null 2>&1 || fail "create"
sums=$(sha256sum a b none)
unchanged() { [ "$sums" = "$(sha256sum a b none)" ] || fail "$1: a member was written"; }

rc=0; out=$("$URAID" zero-superblock none 2>&1) || rc=$?
[ "$rc" = 1 ] || fail "no superblock: exit $rc, not 1: $out"
grep -q "none: Unrecognised md component device" <<< "$out" || fail "no superblock: $out"
[ "$(wc -l <<< "$out")" = 1 ] || fail "no superblock: more than one line: $out"
unchanged "no superblock"
rc=0; out=$("$URAID" zero-superblock a none 2>&1) || rc=$?
[ "$rc" = 1 ] || fail "a good member, then none: exit $rc"
unchanged "a good member, then one with no superblock"
echo "ok: a member with no md superblock is refused, and no member written"

out=$("$URAID" zero-superblock --force none 2>&1) || fail "--force: $out"
[ -z "$out" ] || fail "--force is not quiet: $out"
unchanged "--force on no superblock"
echo "ok: --force skips a member with no superblock quietly"

rc=0; out=$("$URAID" zero-superblock a ./a 2>&1) || rc=$?
[ "$rc" != 0 ] && grep -q "given twice" <<< "$out" || fail "a member given twice: $rc: $out"
unchanged "a member given twice"
echo "ok: a member given twice is refused"

rc=0
out=$("$URAID" serve --run "\"$URAID\" zero-superblock a" a b 2>&1) || rc=$?
[ "$rc" != 0 ] || fail "a served member was zeroed: $out"
grep -q "a: in use by another process" <<< "$out" || fail "a served member: $out"
unchanged "a served member"
echo "ok: a member of an array being served is refused"

"$URAID" zero-superblock a b 2>/dev/null || fail "zero a b"
"$URAID" examine a >/dev/null 2>&1 && fail "uraid examine still finds a superblock"
echo "ok: both members of an array zeroed"
