#!/bin/bash
# md-takeover-online.sh — level changes while serving (`uraid grow --level L
# CONTROL`, mdadm --grow --level on a running array), each under a client
# writing at random against a flat reference file, on one serve:
#   raid1 of 2 -> raid5 -> raid1 -> raid0 (one copy leaves) -> raid5
#   (--add NEW: the parity rebuilt while serving) -> raid0 (the parity
#   leaves); raid10 n2 of 4 -> raid0; `uraid detail` and mdadm --examine
#   (the superblocks written) follow each step (the rows a reshape joins:
#   md-takeover-online-restripe.sh, on the helpers of md-takeover-lib.sh).  The data read back after each serve stops is the
#   reference (LUKS2 above: md-takeover-online-luks.sh).  Refused, nothing
#   changed: a level pair md has no takeover
#   for, a role the new level adds without a NEW, raid0 with a spare, a
#   write-intent bitmap.
. "$(dirname "$0")/md-takeover-lib.sh"

for i in 0 1 2 3; do truncate -s 8M "$tmp/m$i"; done
first=$tmp/m0
reshape_array --level=1 -- "$tmp/m0" "$tmp/m1"
serve "$tmp/m0" "$tmp/m1"
level 5 raid5 2
level 1 raid1 2
refused "md has no takeover between these levels" --level 6
level 0 raid0 1
refused "no new member takes it" --level 5
level 5 raid5 2 --add "$tmp/m2"
"$URAID" add "$ctl" "$tmp/m3" >/dev/null || fail "add a spare"
refused "raid0 keeps no spare" --level 0
"$URAID" remove "$ctl" "$tmp/m3" >/dev/null || fail "remove the spare"
level 0 raid0 1
end "$tmp/m0"

for i in 0 1 2 3; do rm -f "$tmp/m$i"; truncate -s 8M "$tmp/m$i"; done
reshape_array --level=10 --layout=n2 -- "$tmp/m0" "$tmp/m1" "$tmp/m2" "$tmp/m3"
serve "$tmp/m0" "$tmp/m1" "$tmp/m2" "$tmp/m3"
"$URAID" grow --bitmap=internal "$ctl" >/dev/null || fail "bitmap added while serving"
refused "write-intent bitmap" --level 0
"$URAID" grow --bitmap=none "$ctl" >/dev/null || fail "bitmap removed while serving"
level 0 raid0 2
end "$tmp/m0" "$tmp/m2"
