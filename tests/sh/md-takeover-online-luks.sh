#!/bin/bash
# md-takeover-online-luks.sh — LUKS2 on a served raid1 taken over to raid5
# (`uraid grow --level 5 CONTROL`) under a client writing at random and
# reading back: the layers above the md vol (a slice, the crypt vol that
# reads through its child's view, which a raid5 has not) go on over the
# new level; the data read back after the serve stops is the reference.
. "$(dirname "$0")/md-takeover-lib.sh"

first=$tmp/m0
for i in 0 1; do rm -f "$tmp/m$i"; truncate -s 24M "$tmp/m$i"; done
"$URAID" create --level=1 "$tmp/m0" "$tmp/m1" >/dev/null 2>&1 || fail "create"
printf pass >"$tmp/key"
chmod 600 "$tmp/key"
"$URAID" luks-format -q --key-file "$tmp/key" --pbkdf pbkdf2 --pbkdf-force-iterations 1000 \
    "$tmp/m0" "$tmp/m1" >/dev/null 2>&1 || fail "luks-format"
opts=(--key-file "$tmp/key")
size=$("$URAID" serve --readonly "${opts[@]}" --run 'nbdinfo --size "$uri"' "$tmp/m0" "$tmp/m1" 2>/dev/null)
head -c "$size" /dev/urandom >"$tmp/ref"
"$URAID" serve "${opts[@]}" --run "nbdcopy '$tmp/ref' \"\$uri\"" "$tmp/m0" "$tmp/m1" 2>/dev/null ||
    fail "fill through LUKS2"
reshape_client "$tmp/client.py"
serve "$tmp/m0" "$tmp/m1"
level 5 raid5 2
sleep 0.5 # reads after it, through LUKS2
end "$tmp/m0" "$tmp/m1"
