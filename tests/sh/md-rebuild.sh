#!/bin/bash
# md-rebuild.sh — `uraid add` and `uraid rebuild` restore redundancy as md's
# recovery does.  For RAID1 (x2, x3), RAID10 (n2 and f2 over 4), RAID5
# (left-symmetric) and RAID6 (two members lost): create, write random data
# through `uraid serve`, replace member(s) by blank files, add and rebuild;
# then `uraid check` finds the copies (parity) agree, the data reads back,
# `mdadm --examine` shows one events count and a whole role table on every
# member, and each rebuilt member's data area is byte for byte the lost
# one's.  The RAID5 rebuild runs on a slowed new member (sim:), is stopped
# by SIGTERM part-way (its recovery offset is saved) and resumed; a RAID1
# rebuild killed by SIGKILL resumes from its last 64 MiB checkpoint.  A spare
# added to a whole array takes over a lost role.  Refusals (RAID0, too many
# lost, --readonly, NEW among the members, members of two arrays, a small
# NEW, a NEW holding another array's superblock or a LUKS header) say why,
# exit non-zero and change no member.
. "$(dirname "$0")/md-lib.sh"
requires nbdcopy nbdinfo mdadm cmp md5sum du

SIZE=12M

# lose NAME I: member I becomes a blank file (the old one kept as .orig)
lose() {
    mv "$tmp/$1.$2" "$tmp/$1.$2.orig"
    truncate -s $SIZE "$tmp/$1.$2"
}

# verify NAME LOST...: the checks (a)-(d) after a rebuild
verify() {
    local name=$1 out ev
    shift
    out=$("$URAID" check "${files[@]}" 2>&1) || fail "$name: check after rebuild: $out"
    grep -q "the copies agree" <<<"$out" || fail "$name: $out"
    "$URAID" serve --readonly --run "nbdcopy \"\$uri\" $tmp/out" "${files[@]}" 2>/dev/null ||
        fail "$name: read back"
    cmp -s "$tmp/out" "$tmp/$name.data" || fail "$name: data read back differs"
    rm -f "$tmp/out"
    ev=""
    for f in "${files[@]}"; do
        out=$(mdadm --examine "$f" 2>&1) || fail "$name: mdadm --examine $f: $out"
        grep -q "Checksum : .* - correct" <<<"$out" || fail "$name: $f: mdadm checksum: $out"
        grep -q "Device Role : Active device" <<<"$out" || fail "$name: $f: $(grep Role <<<"$out")"
        state=$(sed -n 's/ *Array State : \([^ ]*\) .*/\1/p' <<<"$out")
        [ "$state" = "$(printf 'A%.0s' "${files[@]}")" ] || fail "$name: $f: array state '$state'"
        grep -q "Recovery Offset" <<<"$out" && fail "$name: $f still being recovered"
        e=$(sed -n 's/ *Events : //p' <<<"$out")
        [ -z "$ev" ] || [ "$e" = "$ev" ] || fail "$name: events $e on $f, $ev on another member"
        ev=$e
    done
    for i in "$@"; do
        local off osz used
        off=$(field "$tmp/$name.$i.orig" "Data Offset")
        [ "$off" = "$(field "$tmp/$name.$i" "Data Offset")" ] || fail "$name: data offset of $i"
        used=$(field "$tmp/$name.$i.orig" "Avail Dev Size")
        cmp -s -n $((used * 512)) <(tail -c +$((off * 512 + 1)) "$tmp/$name.$i.orig") \
            <(tail -c +$((off * 512 + 1)) "$tmp/$name.$i") ||
            fail "$name: member $i's data area differs from the lost member's"
    done
    echo "ok: $name rebuilt"
}

# RAID1 x2 and x3, RAID10 n2 and f2: one member lost, add rebuilds it.
for geometry in "r1 1 2 1" "r13 1 3 0" "n2 10 4 2 --layout=n2 --chunk=64" \
                "f2 10 4 1 --layout=f2 --chunk=64"; do
    read -r name level disks victim opts <<<"$geometry"
    # shellcheck disable=SC2086
    make_array "$name" "$level" "$disks" $opts
    lose "$name" "$victim"
    rest=()
    for i in $(seq 0 $((disks - 1))); do [ "$i" = "$victim" ] || rest+=("$tmp/$name.$i"); done
    out=$("$URAID" add "$tmp/$name.$victim" "${rest[@]}" 2>&1) || fail "$name: add: $out"
    grep -q "takes role $victim" <<<"$out" && grep -q "the array is whole and clean" <<<"$out" ||
        fail "$name: add said: $out"
    verify "$name" "$victim"
done

# RAID5: the rebuild onto a slowed new member is stopped by SIGTERM once a
# few MiB are written, then resumed.
make_array r5 5 3 --chunk=64
lose r5 1
out=$("$URAID" add --no-rebuild "$tmp/r5.1" "$tmp/r5.0" "$tmp/r5.2" 2>&1) || fail "r5: add: $out"
[ "$(field "$tmp/r5.1" "Recovery Offset")" = 0 ] || fail "r5: no recovery offset 0 after add"
"$URAID" rebuild "sim:4M:$tmp/r5.1" "$tmp/r5.0" "$tmp/r5.2" > "$tmp/rb.out" 2>&1 &
pid=$!
for _ in $(seq 400); do
    [ "$(du -k "$tmp/r5.1" | cut -f1)" -ge 3072 ] && break
    kill -0 $pid 2>/dev/null || break
    sleep 0.05
done
kill -TERM $pid 2>/dev/null || fail "r5: the rebuild ended before it could be stopped: $(cat "$tmp/rb.out")"
rc=0
wait $pid || rc=$?
[ "$rc" = 1 ] && grep -q "interrupted" "$tmp/rb.out" || fail "r5: stopped rebuild: rc $rc: $(cat "$tmp/rb.out")"
ro=$(field "$tmp/r5.1" "Recovery Offset")
used=$(field "$tmp/r5.0" "Used Dev Size")
[ -n "$used" ] || used=$(field "$tmp/r5.0" "Avail Dev Size")
[ -n "$ro" ] && [ "$ro" -gt 0 ] && [ "$ro" -lt "$used" ] || fail "r5: recovery offset '$ro' of $used after SIGTERM"
mdadm --examine "$tmp/r5.1" | grep -q "Recovery Offset : $ro sectors" || fail "r5: mdadm does not see recovery offset $ro"
out=$("$URAID" rebuild "$tmp/r5.1" "$tmp/r5.0" "$tmp/r5.2" 2>&1) || fail "r5: resume: $out"
grep -q "from [1-9]" <<<"$out" || fail "r5: the rebuild did not resume where it stopped: $out"
files=("$tmp/r5.0" "$tmp/r5.1" "$tmp/r5.2")
verify r5 1

# A rebuild killed outright (SIGKILL) keeps its last periodic checkpoint:
# recovery offset 64 MiB once more than that is written.
truncate -s 96M "$tmp/k.0" "$tmp/k.1"
"$URAID" create --level=1 "$tmp/k.0" "$tmp/k.1" >/dev/null 2>&1 || fail "k: create"
rm "$tmp/k.1"
truncate -s 96M "$tmp/k.1"
"$URAID" add --no-rebuild "$tmp/k.1" "$tmp/k.0" >/dev/null 2>&1 || fail "k: add"
"$URAID" rebuild "sim:20M:$tmp/k.1" "$tmp/k.0" >/dev/null 2>&1 &
pid=$!
for _ in $(seq 600); do
    [ "$(du -k "$tmp/k.1" | cut -f1)" -ge $((68 << 10)) ] && break
    sleep 0.05
done
kill -KILL $pid 2>/dev/null || fail "k: the rebuild ended before it could be killed"
wait $pid || true
[ "$(field "$tmp/k.1" "Recovery Offset")" = 131072 ] ||
    fail "k: recovery offset after SIGKILL: $(field "$tmp/k.1" "Recovery Offset"), want 131072"
out=$("$URAID" rebuild "$tmp/k.1" "$tmp/k.0" 2>&1) || fail "k: resume: $out"
grep -q "from 64 MiB" <<<"$out" || fail "k: did not resume from the checkpoint: $out"
echo "ok: a killed rebuild resumes from its last checkpoint"

# RAID6: two members lost, added one by one, rebuilt in one pass.
make_array r6 6 4 --chunk=64
lose r6 0
lose r6 2
out=$("$URAID" add --no-rebuild "$tmp/r6.0" "$tmp/r6.1" "$tmp/r6.3" 2>&1) || fail "r6: add 0: $out"
out=$("$URAID" add "$tmp/r6.2" "$tmp/r6.0" "$tmp/r6.1" "$tmp/r6.3" 2>&1) || fail "r6: add 2: $out"
grep -q "r6.0 (role 0)" <<<"$out" && grep -q "r6.2 (role 2)" <<<"$out" || fail "r6: not both rebuilt: $out"
verify r6 0 2

# A spare added to a whole RAID1 takes over a lost member's role.
make_array sp 1 2
truncate -s $SIZE "$tmp/sp.s"
out=$("$URAID" add "$tmp/sp.s" "${files[@]}" 2>&1) || fail "spare: add: $out"
grep -q "is a spare .*the array is whole" <<<"$out" || fail "spare: $out"
mdadm --examine "$tmp/sp.s" | grep -q "Device Role : spare" || fail "spare: mdadm does not see a spare"
mv "$tmp/sp.1" "$tmp/sp.1.orig"
out=$("$URAID" rebuild "$tmp/sp.s" "$tmp/sp.0" 2>&1) || fail "spare: rebuild: $out"
mv "$tmp/sp.s" "$tmp/sp.1"
files=("$tmp/sp.0" "$tmp/sp.1")
verify sp 1

# v1.0 and v1.1 with a bitmap: the new member (larger than the lost one)
# gets the array's version, its superblock where that version puts it on
# a member of its own size (1.0: 8-12 KiB from its end), the bitmap copied
# to the same offset from it; rebuilt, it holds the lost member's data.
for V in 1.0 1.1; do
    make_array "v$V" 1 2 --metadata=$V --bitmap=internal
    lose "v$V" 1
    truncate -s 16M "$tmp/v$V.1"
    out=$("$URAID" add "$tmp/v$V.1" "$tmp/v$V.0" 2>&1) || fail "v$V: add: $out"
    verify "v$V" 1
    for f in "${files[@]}"; do
        out=$(mdadm --examine "$f" 2>&1)
        grep -q "Version : $V\$" <<<"$out" || fail "v$V: $f: $(grep Version <<<"$out")"
        grep -q "Internal Bitmap" <<<"$out" || fail "v$V: $f: no internal bitmap"
        "$URAID" examine "$f" | grep -q "Bitmap Chunk" || fail "v$V: $f: no valid bitmap copy"
    done
    want=0
    [ $V = 1.0 ] && want=$(((16 * 2048 - 16) & ~7))
    [ "$(field "$tmp/v$V.1" "Super Offset")" = "$want" ] || fail "v$V: new member's superblock not at $want"
    echo "ok: v$V member added in its version"
done

# Refusals: a clear message, a non-zero exit, and no member changed.
truncate -s $SIZE "$tmp/z.0" "$tmp/z.1" "$tmp/blank" "$tmp/blank2"
"$URAID" create --level=0 --chunk=64 "$tmp/z.0" "$tmp/z.1" >/dev/null 2>&1
refuse "no redundancy" add "$tmp/blank" "$tmp/z.0"
refuse "no redundancy" rebuild "$tmp/z.0" "$tmp/z.1"
make_array two 5 3 --chunk=64
lose two 1
lose two 2
refuse "can rebuild at most 1 member" add "$tmp/two.1" "$tmp/two.0"
refuse "readonly" rebuild --readonly "$tmp/r5.0" "$tmp/r5.1" "$tmp/r5.2"
refuse "readonly" add --readonly "$tmp/blank" "$tmp/r5.0" "$tmp/r5.1"
refuse "also one of the members" add "$tmp/r1.0" "$tmp/r1.0" "$tmp/r1.1"
refuse "different arrays" add "$tmp/blank" "$tmp/r1.0" "$tmp/n2.0"
truncate -s 2M "$tmp/small"
refuse "too small" add "$tmp/small" "$tmp/r1.0" "$tmp/r1.1"
refuse "md superblock of another array" add "$tmp/n2.1" "$tmp/r1.0" "$tmp/r1.1"
refuse "already a member" add "$tmp/r1.1" "$tmp/r1.0"
printf 'LUKS\xba\xbe' | dd of="$tmp/blank2" conv=notrunc 2>/dev/null
refuse "LUKS header" add "$tmp/blank2" "$tmp/r1.0" "$tmp/r1.1"
truncate -s $SIZE "$tmp/end090"   # a 0.90 superblock's magic, 64 KiB before the last 64 KiB
printf '\xfc\x4e\x2b\xa9' | dd of="$tmp/end090" bs=1 seek=$((12 * 1048576 - 65536)) conv=notrunc 2>/dev/null
refuse "md superblock" add "$tmp/end090" "$tmp/r1.0" "$tmp/r1.1"
truncate -s $SIZE "$tmp/half.0"
"$URAID" create --level=1 "$tmp/half.0" missing >/dev/null 2>&1
refuse "no spare or new member" rebuild "$tmp/half.0"
lose r13 2
refuse "not given" rebuild "$tmp/r13.0" "$tmp/r13.1"
echo PASS
