#!/bin/bash
# readonly-foreign.sh — the dead-NAS case: another user's disk images of an
# md RAID1 holding LUKS2, opened with --readonly by an unprivileged user.
# The plaintext reads back, writes are refused, and not one byte of either
# image changes.  Without --readonly the same user gets a clear error.
. "$(dirname "$0")/nbd-lib.sh"
requires nbdcopy setpriv sha256sum
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root to become another user"; exit 77; }
id nobody >/dev/null 2>&1 || { echo "SKIP: no user nobody"; exit 77; }
as_nobody() { setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups -- "$@"; }
as_nobody test -x "$URAID" || { echo "SKIP: nobody cannot run $URAID"; exit 77; }

cd "$tmp"
truncate -s 64M a.img b.img
printf 'nas passphrase' > key
"$URAID" create --level=1 --name=nas a.img b.img 2>/dev/null
"$URAID" luks-format --batch --key-file key --pbkdf-memory=32768 --iter-time=50 a.img b.img 2>/dev/null
head -c 8M /dev/urandom > data
"$URAID" serve --key-file key --run 'nbdcopy data "$uri"' a.img b.img 2>/dev/null

# Hand the images over as another user's files: readable, not writable.
chmod 0444 a.img b.img key
chmod 0777 "$tmp"
before=$(sha256sum a.img b.img)

as_nobody "$URAID" examine a.img b.img > examine.out
grep -q 'Raid Level : raid1' examine.out || fail "examine as nobody"

as_nobody "$URAID" serve --readonly --key-file key \
    --run 'nbdcopy "$uri" out.raw && ! nbdcopy data "$uri" 2>/dev/null' a.img b.img 2>serve.err \
    || { cat serve.err >&2; fail "serve --readonly as nobody"; }
cmp <(head -c 8M out.raw) data || fail "plaintext read as nobody differs"

rc=0
as_nobody "$URAID" serve --key-file key --run true a.img b.img 2>rw.err || rc=$?
[ "$rc" = 1 ] || fail "a writable open of read-only images exited $rc, not 1"
grep -qi 'permission denied' rw.err || { cat rw.err >&2; fail "no clear error for a writable open"; }

[ "$(sha256sum a.img b.img)" = "$before" ] || fail "an image changed"
echo PASS
