#!/bin/bash
# md-check.sh — `uraid check` scrubs RAID1 and RAID10 (near and far):
# copies written through `uraid serve` agree; a few bytes changed behind
# the array's back on one member are found, block by block, without a byte
# of any member changing; --repair makes the copies agree again and the
# array reads what was written; RAID5/6 parity damaged behind the array's
# back is found stripe by stripe and recomputed by --repair.  RAID0 has
# nothing to compare: an error.
. "$(dirname "$0")/nbd-lib.sh"
requires nbdcopy nbdinfo sha256sum cmp

# poke FILE OFFSET: change 4 bytes behind the array's back
poke() { printf 'XXXX' | dd of="$1" bs=1 seek="$2" conv=notrunc 2>/dev/null; }
# Each geometry: level, members, the member to damage and where in its data
# area (fractions of it): a place holding a second copy, so that the first
# copy, which a repair keeps (as md's does), is the one written.  On f2 the
# far half of every member holds second copies.
n=0
for geometry in "1 2 1 1/4 1/2" "10 4 1 1/4 1/2 --layout=n2 --chunk=64" \
                "10 4 2 5/8 7/8 --layout=f2 --chunk=64"; do
    read -r level disks victim at1 at2 opts <<<"$geometry"
    n=$((n + 1))
    files=()
    for i in $(seq "$disks"); do truncate -s 20M "$tmp/c$n.$i"; files+=("$tmp/c$n.$i"); done
    # shellcheck disable=SC2086
    "$URAID" create --level="$level" $opts "${files[@]}" >/dev/null 2>&1 || fail "create $geometry"
    start_server "$tmp/s.sock" "${files[@]}" 2>/dev/null
    uri="nbd+unix:///?socket=$tmp/s.sock"
    size=$(nbdinfo --size "$uri")
    head -c "$size" /dev/urandom > "$tmp/data.img"
    nbdcopy "$tmp/data.img" "$uri" || fail "nbdcopy $geometry"
    stop_server "$server_pid"

    out=$("$URAID" check "${files[@]}" 2>/dev/null) || fail "$geometry: check of agreeing copies: $out"
    grep -q "the copies agree" <<<"$out" || fail "$geometry: $out"

    ex=$("$URAID" examine "${files[victim]}" 2>/dev/null)
    off=$(sed -n 's/ *Data Offset : \([0-9]*\) sectors/\1/p' <<<"$ex")
    avail=$(sed -n 's/ *Avail Dev Size : \([0-9]*\) sectors.*/\1/p' <<<"$ex")
    [ -n "$off" ] && [ -n "$avail" ] || fail "$geometry: no data offset or size"
    # Two 4-byte pokes, each inside one 512-byte block.
    poke "${files[victim]}" $(( (off + avail * ${at1%/*} / ${at1#*/}) * 512 + 100 ))
    poke "${files[victim]}" $(( (off + avail * ${at2%/*} / ${at2#*/}) * 512 + 300 ))
    sha256sum "${files[@]}" > "$tmp/sums"
    rc=0
    out=$("$URAID" check "${files[@]}" 2>/dev/null) || rc=$?
    [ "$rc" = 1 ] || fail "$geometry: check of differing copies exited $rc: $out"
    grep -q "1024 bytes in 2 ranges differ" <<<"$out" || fail "$geometry: $out"
    sha256sum --quiet -c "$tmp/sums" || fail "$geometry: check changed a member"

    out=$("$URAID" check --repair "${files[@]}" 2>/dev/null) || fail "$geometry: repair: $out"
    grep -q "differ, repaired" <<<"$out" || fail "$geometry: $out"
    out=$("$URAID" check "${files[@]}" 2>/dev/null) || fail "$geometry: check after repair: $out"
    grep -q "the copies agree" <<<"$out" || fail "$geometry: after repair: $out"
    # The first copy was the reference: what was written is what is read.
    start_server "$tmp/s.sock" "${files[@]}" 2>/dev/null
    nbdcopy "$uri" "$tmp/out.img" || fail "nbdcopy out $geometry"
    stop_server "$server_pid"
    cmp "$tmp/data.img" "$tmp/out.img" || fail "$geometry: data changed by the repair"
    rm -f "$tmp/out.img"
done

# RAID5 (left-symmetric, 3 members) and RAID6 (left-symmetric, 4): P of
# stripe 0 is on the last member, and on RAID6 Q of stripe 1 is too.  Damage
# that parity: the check finds those stripes and changes nothing; the
# repair recomputes the parity from the data, which reads back unchanged.
for geometry in "5 3 1" "6 4 2"; do
    read -r level disks bad <<<"$geometry"
    files=()
    for i in $(seq "$disks"); do truncate -s 20M "$tmp/q$level.$i"; files+=("$tmp/q$level.$i"); done
    "$URAID" create --level="$level" --chunk=64 "${files[@]}" >/dev/null 2>&1 || fail "create raid$level"
    start_server "$tmp/s.sock" "${files[@]}" 2>/dev/null
    uri="nbd+unix:///?socket=$tmp/s.sock"
    head -c "$(nbdinfo --size "$uri")" /dev/urandom > "$tmp/data.img"
    nbdcopy "$tmp/data.img" "$uri" || fail "nbdcopy raid$level"
    stop_server "$server_pid"
    out=$("$URAID" check "${files[@]}" 2>/dev/null) || fail "raid$level: check: $out"
    grep -q "the copies agree" <<<"$out" || fail "raid$level: $out"
    last=${files[$((disks - 1))]}
    off=$("$URAID" examine "$last" 2>/dev/null | sed -n 's/ *Data Offset : \([0-9]*\) sectors/\1/p')
    poke "$last" $((off * 512 + 1000))
    [ "$level" = 6 ] && poke "$last" $((off * 512 + 65536 + 2000))
    sha256sum "${files[@]}" > "$tmp/sums"
    rc=0
    out=$("$URAID" check "${files[@]}" 2>/dev/null) || rc=$?
    [ "$rc" = 1 ] && grep -q "in $bad ranges differ" <<<"$out" || fail "raid$level: damaged parity: rc $rc: $out"
    sha256sum --quiet -c "$tmp/sums" || fail "raid$level: check changed a member"
    out=$("$URAID" check --repair "${files[@]}" 2>/dev/null) || fail "raid$level: repair: $out"
    out=$("$URAID" check "${files[@]}" 2>/dev/null) || fail "raid$level: after repair: $out"
    start_server "$tmp/s.sock" "${files[@]}" 2>/dev/null
    nbdcopy "$uri" "$tmp/out.img" || fail "nbdcopy out raid$level"
    stop_server "$server_pid"
    cmp "$tmp/data.img" "$tmp/out.img" || fail "raid$level: data changed by the parity repair"
    rm -f "$tmp/out.img"
done

truncate -s 20M "$tmp/z.1" "$tmp/z.2"
"$URAID" create --level=0 --chunk=64 "$tmp/z.1" "$tmp/z.2" >/dev/null 2>&1
rc=0
out=$("$URAID" check "$tmp/z.1" "$tmp/z.2" 2>&1) || rc=$?
[ "$rc" = 1 ] && grep -q "nothing to compare" <<<"$out" || fail "raid0 check: rc $rc: $out"
echo PASS
