#!/bin/bash
# md-grow.sh — `uraid grow --raid-devices` changes the number of copies of
# an md RAID1 offline, as `mdadm --grow -n` does.  A two-way mirror holding
# random data grows to three with --add: `uraid check` finds the copies
# agree, the data reads back, and `mdadm --examine` shows Raid Devices : 3,
# one events count and AAA on every member.  Grown to four without --add it
# is degraded (mdadm shows the missing role, a degraded serve reads the
# data); shrunk back to three it is whole again.  A blank pair goes to
# three roles (AA.) and back to two (AA), then a spare given takes the new
# role.  Refusals (RAID5 and RAID0, a shrink dropping a role a member
# holds, a NEW too small or already a member, a member left out) say why
# and change no file.
. "$(dirname "$0")/md-lib.sh"
requires nbdcopy nbdinfo mdadm cmp md5sum

SIZE=12M

# examine_all STATE DEVICES FILES...: mdadm sees every file with that
# array state and device count, one events count among them
examine_all() {
    local want=$1 n=$2 out ev="" e state
    shift 2
    for f in "$@"; do
        out=$(mdadm --examine "$f" 2>&1) || fail "mdadm --examine $f: $out"
        grep -q "Checksum : .* - correct" <<<"$out" || fail "$f: mdadm checksum: $out"
        grep -q "Raid Devices : $n\$" <<<"$out" || fail "$f: $(grep 'Raid Devices' <<<"$out"), want $n"
        state=$(sed -n 's/ *Array State : \([^ ]*\) .*/\1/p' <<<"$out")
        [ "$state" = "$want" ] || fail "$f: array state '$state', want '$want'"
        e=$(sed -n 's/ *Events : //p' <<<"$out")
        [ -z "$ev" ] || [ "$e" = "$ev" ] || fail "events $e on $f, $ev on another member"
        ev=$e
    done
}

# Two copies grow to three; the new one is rebuilt.
make_array g 1 2
truncate -s $SIZE "$tmp/g.2"
out=$("$URAID" grow --raid-devices 3 --add "$tmp/g.2" "${files[@]}" 2>&1) || fail "grow 3: $out"
grep -q "2 -> 3 devices" <<<"$out" && grep -q "takes role 2" <<<"$out" &&
    grep -q "the array is whole" <<<"$out" || fail "grow 3 said: $out"
files+=("$tmp/g.2")
verify g "$tmp/g.data" "${files[@]}"
examine_all AAA 3 "${files[@]}"
echo "ok: grown to three copies, the third rebuilt"

# Four roles without a fourth member: degraded, still served.
out=$("$URAID" grow -n 4 "${files[@]}" 2>&1) || fail "grow 4: $out"
grep -q "role 3 is missing" <<<"$out" || fail "grow 4 said: $out"
examine_all AAA. 4 "${files[@]}"
"$URAID" serve --degraded --readonly --run "nbdcopy \"\$uri\" $tmp/out" "${files[@]}" 2>/dev/null ||
    fail "degraded read"
cmp -s "$tmp/out" "$tmp/g.data" || fail "the degraded array reads back other data"
rm -f "$tmp/out"
echo "ok: grown to four without a new member: degraded, served"

# Refusals: a clear message, a non-zero exit, and no file changed.
refuse "fail and remove the members in roles >= 2" grow -n 2 "${files[@]}"
refuse "not given" grow -n 3 "$tmp/g.0" "$tmp/g.1"
truncate -s 2M "$tmp/small"
refuse "too small" grow -n 4 --add "$tmp/small" "${files[@]}"
refuse "already a member" grow -n 4 --add "$tmp/g.0" "$tmp/g.1" "$tmp/g.2"
refuse "given twice" grow -n 4 "$tmp/g.0" "${files[@]}"
refuse "both as --add NEW and as a member" grow -n 4 --add "$tmp/g.0" "${files[@]}"
truncate -s $SIZE "$tmp/r5.0" "$tmp/r5.1" "$tmp/r5.2" "$tmp/z.0" "$tmp/z.1" "$tmp/blank"
"$URAID" create --level=5 --chunk=64 "$tmp/r5.0" "$tmp/r5.1" "$tmp/r5.2" >/dev/null 2>&1 || fail "create r5"
"$URAID" create --level=0 --chunk=64 "$tmp/z.0" "$tmp/z.1" >/dev/null 2>&1 || fail "create r0"
refuse "takes 1 new members" grow -n 4 "$tmp/r5.0" "$tmp/r5.1" "$tmp/r5.2"
refuse "takes 1 new members" grow -n 3 "$tmp/z.0" "$tmp/z.1"
echo "ok: refusals"

# Back to three: the empty role goes, the array is whole again.
out=$("$URAID" grow -n 3 "${files[@]}" 2>&1) || fail "shrink 3: $out"
grep -q "4 -> 3 devices" <<<"$out" || fail "shrink said: $out"
examine_all AAA 3 "${files[@]}"
verify g "$tmp/g.data" "${files[@]}"
echo "ok: shrunk back to three copies"

# mdadm's round trip: -n 3 without a member, then back to -n 2.
truncate -s $SIZE "$tmp/m.0" "$tmp/m.1"
"$URAID" create --level=1 "$tmp/m.0" "$tmp/m.1" >/dev/null 2>&1 || fail "create m"
"$URAID" grow -n 3 "$tmp/m.0" "$tmp/m.1" >/dev/null 2>&1 || fail "m: grow 3"
examine_all AA. 3 "$tmp/m.0" "$tmp/m.1"
"$URAID" grow -n 2 "$tmp/m.0" "$tmp/m.1" >/dev/null 2>&1 || fail "m: shrink 2"
examine_all AA 2 "$tmp/m.0" "$tmp/m.1"
echo "ok: two copies, three roles, two again"

# A spare given takes the new role and is rebuilt (md's recovery would).
truncate -s $SIZE "$tmp/m.s"
"$URAID" add --spare "$tmp/m.s" "$tmp/m.0" "$tmp/m.1" >/dev/null 2>&1 || fail "m: add spare"
out=$("$URAID" grow -n 3 "$tmp/m.0" "$tmp/m.1" "$tmp/m.s" 2>&1) || fail "m: grow with a spare: $out"
grep -q "a spare, takes role 2" <<<"$out" && grep -q "the array is whole" <<<"$out" ||
    fail "m: grow with a spare said: $out"
examine_all AAA 3 "$tmp/m.0" "$tmp/m.1" "$tmp/m.s"
out=$("$URAID" check "$tmp/m.0" "$tmp/m.1" "$tmp/m.s" 2>&1) || fail "m: check: $out"
grep -q "the copies agree" <<<"$out" || fail "m: $out"
echo "ok: a spare takes the new role"
echo PASS
