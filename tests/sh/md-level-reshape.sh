#!/bin/bash
# md-level-reshape.sh — mdadm's level changes that need a reshape, in one
# `uraid grow` each, through the takeover table and the restripe
# (md_grow.c: the takeover, then md_reshape_restripe(), or the other way
# round), on arrays holding random data:
#   raid1 of 2 --level=5 -n 3 --add NEW   the takeover to a 2-device raid5,
#                                         then the reshape to 3 devices;
#   raid5 --level=6 --layout=left-symmetric --add Q   the takeover to
#                                         left-symmetric-6 (Q rebuilt), then
#                                         the layout reshape to left-symmetric;
#   raid6 left-symmetric --level=5        the layout reshape to
#                                         left-symmetric-6, then the
#                                         takeover (Q's device a spare);
#   raid0 -n N --add NEW...               raid0 -> raid4 with its parity
#                                         missing (as mdadm), the reshape
#                                         (the first NEW rebuilt in the
#                                         parity's role as it passes),
#                                         raid4 -> raid0.
# After each: mdadm --examine reads level, layout, devices and state on
# every member, the data reads back, `uraid check` finds the parity
# agrees.  Checked before the first byte: a change the second step would
# refuse changes no file; a stop part-way (--stop-at) leaves the reshape
# recorded and the level as it was, for --continue.
. "$(dirname "$0")/md-lib.sh"
requires nbdcopy nbdinfo mdadm cmp md5sum

SIZE=8M

# geometry LEVEL DEVICES LAYOUT STATE FILES...: what mdadm sees on each
geometry() {
    local want="$1|$2|$3|$4 ('A' == active, '.' == missing, 'R' == replacing)" f got
    shift 4
    for f in "$@"; do
        got=$(mdadm --examine "$f" 2>&1 | sed -n 's/^ *\(Raid Level\|Layout\|Raid Devices\|Array State\) : //p' | paste -sd'|')
        [ "$got" = "$want" ] || fail "$f: mdadm --examine '$got', want '$want'"
    done
}

reads() { # reads NAME FILES...: the array reads back NAME's data
    local name=$1
    shift
    "$URAID" serve --readonly --run "nbdcopy \"\$uri\" - | head -c \$(stat -c %s $tmp/$name.data) > $tmp/out" "$@" 2>/dev/null ||
        fail "$name: read back"
    cmp -s "$tmp/out" "$tmp/$name.data" || fail "$name: the array reads back other data"
}

agrees() {
    local out
    out=$("$URAID" check "$@" 2>&1) || fail "check: $out"
    grep -q "the copies agree" <<<"$out" || fail "check: $out"
}

grow() {
    out=$("$URAID" grow "$@" 2>&1) || fail "uraid grow $*: $out"
}

# said WHAT...: each WHAT is in what the last grow said
said() {
    local w
    for w in "$@"; do grep -q -- "$w" <<<"$out" || fail "wanted '$w', said: $out"; done
}

# settled LEVEL DEVICES LAYOUT STATE FILES...: mdadm sees that on each
# member, the array reads back m's data, its parity agrees
settled() {
    geometry "$@"
    shift 4
    reads m "$@"
    agrees "$@"
}

# raid1 -> raid5 on three devices
make_array m 1 2
r=("${files[@]}")
truncate -s $SIZE "$tmp/m.2"
refuse "takes 1 new members" grow --level=5 --raid-devices=3 "${r[@]}"
grow --level=5 --raid-devices=3 --add "$tmp/m.2" "${r[@]}"
said "raid1 -> raid5 left-symmetric, chunk 64K, 2 devices" "reshaped to 3 devices"
r+=("$tmp/m.2")
settled raid5 3 left-symmetric AAA "${r[@]}"
echo "ok: raid1 of 2 --level=5 -n 3: taken over, then reshaped to 3 devices"

# raid5 -> raid6 at left-symmetric (Q rotating)
truncate -s $SIZE "$tmp/m.q"
grow --level=6 --layout=left-symmetric --add "$tmp/m.q" "${r[@]}"
said "raid5 -> raid6 left-symmetric-6" "layout left-symmetric-6 -> left-symmetric"
r+=("$tmp/m.q")
settled raid6 4 left-symmetric AAAA "${r[@]}"
echo "ok: raid5 --level=6 --layout=left-symmetric: taken over at -6, then restriped"

# raid6 left-symmetric -> raid5: a stop part-way first, then to the end
grow --level=5 --stop-at 2048 "${r[@]}"
said "level change follows the reshape"
mdadm --examine "${r[0]}" | grep -q "Reshape pos'n" || fail "6 -> 5: no reshape recorded after --stop-at"
mdadm --examine "${r[0]}" | grep -q "Raid Level : raid6" || fail "6 -> 5: the level changed before the reshape ended"
reads m "${r[@]}"
"$URAID" grow --continue "${r[@]}" >/dev/null 2>&1 || fail "--continue"
grow --level=5 "${r[@]}"
said "raid6 -> raid5 left-symmetric"
settled raid5 3 left-symmetric AAA "${r[@]:0:3}"
mdadm --examine "$tmp/m.q" | grep -q "Device Role : spare" || fail "Q's device is not a spare"
echo "ok: raid6 left-symmetric --level=5: restriped to -6 (stopped, continued), then taken over"

# raid0 -> more devices, through a raid4 with its parity missing (as
# mdadm): in one command, then stopped part-way and continued
make_array z 0 3 --chunk=64
z=("${files[@]}")
truncate -s $SIZE "$tmp/z.3" "$tmp/z.4"
refuse "takes 1 new members" grow --raid-devices=4 "${z[@]}"
refuse "more devices only" grow --raid-devices=2 "${z[@]}"
grow --raid-devices=4 --add "$tmp/z.3" "${z[@]}"
said "raid0 -> raid4, chunk 64K" "raid4 -> raid0, chunk 64K, 4 devices"
z+=("$tmp/z.3")
for f in "${z[@]}"; do
    got=$(mdadm --examine "$f" 2>&1 | sed -n 's/^ *\(Raid Level\|Raid Devices\|Array State\) : //p' | paste -sd'|')
    [ "$got" = "raid0|4|AAAA ('A' == active, '.' == missing, 'R' == replacing)" ] || fail "$f: mdadm --examine '$got'"
done
reads z "${z[@]}"
grow --raid-devices=5 --add "$tmp/z.4" --stop-at 4096 "${z[@]}"
said "back to raid0 once the reshape ends"
mdadm --examine "$tmp/z.4" | grep -q "Recovery Offset" || fail "the new member in the parity's role is not recovering"
reads z "${z[@]}" "$tmp/z.4"
"$URAID" grow --continue "${z[@]}" "$tmp/z.4" >/dev/null 2>&1 || fail "--continue"
grow --level=0 "${z[@]}" "$tmp/z.4"
z+=("$tmp/z.4")
mdadm --examine "$tmp/z.4" | grep -q "Raid Devices : 5" || fail "raid0 of 5: $(mdadm --examine "$tmp/z.4")"
reads z "${z[@]}"
echo "ok: raid0 -n 4 and -n 5: through a raid4 with its parity missing and back (stopped, continued)"
