#!/bin/bash
# md-takeover-online-restripe.sh — the level changes mdadm joins to a
# reshape, while serving under a client writing at random against a flat
# reference: a raid6 of 4 at a layout rotating Q -> raid5 (restriped to its
# -6 form while serving, then taken over when that ends; Q's device a
# spare) -> raid6 (the spare takes Q, rebuilt while serving) -> raid5;
# and a raid1 of 2 -> raid5, then reshaped to 3 devices (--level 5 -n 3
# --add NEW); mdadm --examine follows each step, the data read back after
# is the reference.  Refused: raid5 -> raid6 to a layout rotating Q (Q is rebuilt
# first: two steps).
. "$(dirname "$0")/md-takeover-lib.sh"

for i in 0 1 2 3; do truncate -s 4M "$tmp/m$i"; done
first=$tmp/m0
reshape_array --level=6 --layout=left-symmetric -- "$tmp/m0" "$tmp/m1" "$tmp/m2" "$tmp/m3"
serve "$tmp/m0" "$tmp/m1" "$tmp/m2" "$tmp/m3"
level 5 raid5 3
e=$(mdadm --examine "$tmp/m0")
grep -q "Layout : left-symmetric\$" <<<"$e" || fail "raid6 -> raid5: mdadm: layout: $e"
"$URAID" detail "$ctl" | grep -q "spare .*m3" || fail "m3 is not a spare after raid6 -> raid5"
refused "restripes after Q is rebuilt" --level 6 --layout left-symmetric
level 6 raid6 4
level 5 raid5 3
end "$tmp/m0" "$tmp/m1" "$tmp/m2"

# raid1 of 2 --level 5 -n 3 --add NEW: the takeover, then the reshape to
# 3 devices while serving (the size grows once it ended).
for i in 0 1 2; do rm -f "$tmp/m$i"; truncate -s 4M "$tmp/m$i"; done
reshape_array --level=1 -- "$tmp/m0" "$tmp/m1"
serve "$tmp/m0" "$tmp/m1"
level 5 raid5 3 -n 3 --add "$tmp/m2"
[ "$(nbdinfo --size "$uri")" = $((size * 2)) ] || fail "raid1 -> raid5 of 3: a new connection's size"
end "$tmp/m0" "$tmp/m1" "$tmp/m2"
