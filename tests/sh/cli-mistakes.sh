#!/bin/bash
# cli-mistakes.sh — the mistakes an mdadm / cryptsetup user makes on a first
# day: a missing member, one given twice (or under two names), one too
# small, a directory, an unknown option, nothing to act on, the wrong
# passphrase, a key file that is not there, a socket or a member in use, a
# read-only file served writable, half of a RAID1.  Each is refused with a
# non-zero exit and a line naming what is wrong (and which file), the line
# not repeated, no usage text dumped, and no byte of any member changed
# (sha256 of every image before and after).
. "$(dirname "$0")/lib.sh"
requires sha256sum timeout python3
cd "$tmp"

truncate -s 18M a.img b.img
truncate -s 2M c.img d.img e.img
truncate -s 1M small.img
mkdir dir.d
printf secret > key; printf wrong > wrong; printf new > new
chmod 600 key wrong new
fast=(--pbkdf pbkdf2 --pbkdf-force-iterations 1000)
"$URAID" create --level=1 a.img b.img >/dev/null 2>&1 || fail "create a b"
"$URAID" luks-format -q --key-file key "${fast[@]}" a.img b.img >/dev/null 2>&1 ||
    fail "luks-format a b"
"$URAID" create --level=1 c.img d.img >/dev/null 2>&1 || fail "create c d"

sums() { sha256sum ./*.img; }
last=""   # the sums after the last check: the next one's before
# refused WHAT EXPECT CMD...: CMD exits non-zero, its stderr has EXPECT once,
# no line of usage text, at most one more line than the one naming it
# (getopt's own line with a pointer to --help), and no image changed.
refused() {
    local what=$1 expect=$2 before rc=0 n
    shift 2
    before=${last:-$(sums)}
    timeout 20 "$@" > out 2> err < /dev/null || rc=$?
    [ "$rc" != 0 ] || fail "$what: exit 0: $(cat err)"
    [ "$rc" != 124 ] || fail "$what: still running after 20 s: $(cat err)"
    n=$(grep -cF -- "$expect" err || true)
    [ "$n" = 1 ] || fail "$what: '$expect' $n times, not once, in: $(cat err)"
    ! grep -q "^usage:" err || fail "$what: the usage text instead of one line: $(head -3 err)"
    last=$(sums)
    [ "$before" = "$last" ] || fail "$what: an image changed"
    echo "ok: $what: $(grep -F -- "$expect" err)"
}

refused "create, a member missing" "nonexistent.img: No such file" \
    "$URAID" create --level=1 e.img nonexistent.img
refused "create, a member given twice" "c.img is given twice" \
    "$URAID" create --force --level=1 c.img c.img
refused "create, one file under two names" "./e.img is given twice (as e.img)" \
    "$URAID" create --level=1 e.img ./e.img
refused "create, a member too small" "small.img is too small" \
    "$URAID" create --level=1 e.img small.img
refused "create, a directory" "dir.d: Is a directory" "$URAID" create --level=1 e.img dir.d
refused "create, over an array" "c.img already holds an md superblock" \
    "$URAID" create --level=1 c.img e.img
refused "create, an unknown option" "unrecognized option '--bogus'" \
    "$URAID" create --level=1 --bogus e.img c.img
refused "add, the arguments in the wrong order" "e.img holds no md superblock" \
    "$URAID" add c.img d.img e.img

refused "serve, no members" "serve: no members given" "$URAID" serve --socket s.sock
refused "serve, an unknown option" "unrecognized option '--bogus'" \
    "$URAID" serve --bogus --socket s.sock c.img d.img
refused "serve, a directory" "dir.d: Is a directory" "$URAID" serve -f --socket s.sock dir.d
refused "serve, half of a RAID1" "1 of 2 members found" "$URAID" serve -f --socket s.sock c.img
refused "serve, the wrong passphrase" "md/uraid: LUKS2: no key slot matches this passphrase" \
    "$URAID" serve -f --key-file wrong --socket s.sock a.img b.img
refused "serve, a key file that is not there" "key file nokey: No such file" \
    "$URAID" serve -f --key-file nokey --socket s.sock a.img b.img
refused "serve, a key file that is not there, no LUKS" "key file nokey: No such file" \
    "$URAID" serve -f --key-file nokey --socket s.sock c.img d.img
# A member that can be read but not written (immutable: root writes any
# file mode): served writable, it names --readonly.
truncate -s 2M ro.img
last=$(sums)
if chattr +i ro.img 2>/dev/null; then
    cleanup_hooks+=("chattr -i '$tmp/ro.img'")
    refused "serve, a read-only member served writable" "(--readonly opens it read-only)" \
        "$URAID" serve -f --socket s.sock ro.img
    chattr -i ro.img
else
    echo "skip: serve, a read-only member: chattr +i does not work here"
fi
# A socket path nobody listens on, and a file that is not a socket: named as
# such, and left where they are.
python3 -c 'import socket,sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' stale.sock
touch notsock
refused "serve, a socket left behind" "stale.sock: Address already in use: a socket nobody listens on" \
    "$URAID" serve -f --socket stale.sock c.img d.img
refused "serve, a file at the socket's path" "notsock: exists and is not a socket" \
    "$URAID" serve -f --socket notsock c.img d.img
[ -S stale.sock ] && [ -f notsock ] || fail "a refused socket path was removed"
# While a.img b.img are served on s.sock: the socket and the members are taken.
refused "serve, a socket in use; a member being served" "in use" \
    "$URAID" serve --key-file key --socket s.sock --run \
    "\"$URAID\" serve -f --socket s.sock c.img d.img 2>&1 | grep -q 's.sock: Address already in use: a server listens there' &&
     \"$URAID\" serve -f --key-file key --socket t.sock a.img b.img" a.img b.img

refused "probe, no members" "probe: no members given" "$URAID" probe
refused "check, no members" "check: no members given" "$URAID" check
refused "grow, no members" "grow: no members given" "$URAID" grow -n 3
refused "grow, nothing to change" "grow: say what to change" "$URAID" grow c.img d.img
refused "rebuild, no members" "rebuild: no members given" "$URAID" rebuild
refused "add, no members" "add: give the new member" "$URAID" add e.img
refused "detail, no socket" "detail: give one control socket" "$URAID" detail

refused "luks-add-key, the wrong passphrase" "no key slot matches this passphrase" \
    "$URAID" luks-add-key --key-file wrong --new-key-file new "${fast[@]}" a.img b.img
refused "luks-add-key, a new key file that is not there" "key file nokey: No such file" \
    "$URAID" luks-add-key --key-file key --new-key-file nokey "${fast[@]}" a.img b.img
refused "luks-change-key, the wrong passphrase" "no key slot matches this passphrase" \
    "$URAID" luks-change-key --key-file wrong --new-key-file new "${fast[@]}" a.img b.img
refused "luks-remove-key, the wrong passphrase" "no key slot matches this passphrase" \
    "$URAID" luks-remove-key --key-file wrong a.img b.img

# A file the user may only read, served writable: as an unprivileged user.
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
    chmod 755 "$tmp"; chmod 644 ./*.img
    refused "serve, a read-only file writable" "c.img: Permission denied" \
        setpriv --reuid=nobody --regid=nogroup --clear-groups \
        "$URAID" serve -f --socket "$tmp/s.sock" c.img d.img
else
    echo "skip part: a read-only file (needs root and setpriv to become nobody)"
fi

truncate -s 8M f.img; last=""
refused "luks-format, a volume too small" "luks-format: f.img: 8388608 bytes is too small" \
    "$URAID" luks-format -q --key-file key "${fast[@]}" f.img
