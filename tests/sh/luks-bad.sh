#!/bin/bash
# luks-bad.sh — bad input is a clear error, a nonzero exit and no change to
# the member: wrong passphrase, truncated and empty key files, a damaged
# primary header (recovered from the secondary with a warning; repaired
# only by a writing open), both headers damaged, unknown ciphers.
source "$SRCDIR/tests/sh/luks-lib.sh"
requires python3 sha256sum

cd "$tmp"
printf 'correct horse' > key
printf 'wrong horse' > wrong
head -c 7 key > truncated
: > empty
truncate -s 20M v.img
"$URAID" luks-format --batch --key-file key "${FAST_PBKDF2[@]}" v.img

# expect_fail MESSAGE CMD... — exits 1, says MESSAGE, v.img unchanged
expect_fail() {
    local msg=$1 before rc=0; shift
    before=$(sha v.img)
    "$@" >out.txt 2>err.txt || rc=$?
    [ $rc = 1 ] || { cat err.txt >&2; fail "'$*' exit $rc, want 1"; }
    grep -q "$msg" err.txt || { cat err.txt >&2; fail "'$*' does not say '$msg'"; }
    [ "$(sha v.img)" = "$before" ] || fail "'$*' changed the member"
}

expect_fail 'no key slot matches this passphrase' userve --key-file wrong v.img --run true
expect_fail 'no key slot matches this passphrase' userve --key-file truncated v.img --run true
expect_fail 'is empty' userve --key-file empty v.img --run true
expect_fail 'no key slot matches this passphrase' "$URAID" luks-add-key --key-file wrong --new-key-file key v.img
expect_fail 'no key slot matches this passphrase' "$URAID" luks-remove-key --key-file wrong v.img
expect_fail 'no such file\|No such file' userve --key-file missing v.img --run true
userve --key-file key v.img --run true || fail "the right key does not open"
# The volume key is shown only after YES and the right passphrase.
echo no | "$URAID" luks-dump --dump-volume-key --key-file key v.img >out.txt 2>err.txt &&
    fail "luks-dump --dump-volume-key without YES"
grep -q 'MK dump' out.txt && fail "volume key printed without YES"
expect_fail 'no key slot matches' "$URAID" luks-dump --dump-volume-key --batch --key-file wrong v.img
grep -q 'MK dump' out.txt && fail "volume key printed for a wrong passphrase"
echo YES | "$URAID" luks-dump --dump-volume-key --key-file key v.img | grep -q '^MK dump:' ||
    fail "no volume key after YES"

# Damaged primary: read-only opens and luks-dump report it and write nothing.
damage v.img 0
before=$(sha v.img)
"$URAID" luks-dump v.img >dump.txt 2>err.txt || fail "luks-dump of a damaged primary"
grep -q 'primary LUKS2 header is damaged' err.txt || fail "luks-dump does not warn"
grep -q 'primary damaged' dump.txt || fail "luks-dump report does not say so"
userve --readonly --key-file key v.img --run true 2>err.txt || fail "read-only open"
grep -q 'primary LUKS2 header is damaged' err.txt || fail "serve does not warn"
[ "$(sha v.img)" = "$before" ] || fail "a read-only open wrote"
expect_fail 'no key slot matches' userve --key-file wrong v.img --run true
# A writable open with the right passphrase repairs it.
userve --key-file key v.img --run true 2>err.txt || fail "writable open"
grep -q 'header copies rewritten' err.txt || fail "no repair reported"
"$URAID" luks-dump v.img 2>err.txt >/dev/null
[ -s err.txt ] && { cat err.txt >&2; fail "header still damaged after repair"; }
if command -v cryptsetup >/dev/null; then
    cryptsetup open --test-passphrase --key-file key v.img || fail "cryptsetup after repair"
fi

# Both damaged.
damage v.img 0
damage v.img 16384
expect_fail 'both LUKS2 headers are damaged' userve --key-file key v.img --run true
expect_fail 'both LUKS2 headers are damaged' "$URAID" luks-dump v.img

# Unknown ciphers: in the data segment, and in a key-slot area.
truncate -s 20M v.img
"$URAID" luks-format --batch --key-file key "${FAST_PBKDF2[@]}" v.img
luks2_edit v.img "j['segments']['0']['encryption'] = 'twofish-xts-plain64'"
expect_fail "unsupported cipher 'twofish-xts-plain64'" userve --key-file key v.img --run true
luks2_edit v.img "j['segments']['0']['encryption'] = 'aes-xts-plain64'; j['keyslots']['0']['area']['encryption'] = 'serpent-cbc-plain'"
expect_fail "unsupported cipher 'serpent-cbc-plain'" userve --key-file key v.img --run true
# An unfinished reencryption (a mandatory requirement) is refused.
luks2_edit v.img "j['keyslots']['0']['area']['encryption'] = 'aes-xts-plain64'; j['config']['requirements'] = {'mandatory': ['online-reencrypt-v2']}"
expect_fail "online-reencrypt-v2" userve --key-file key v.img --run true

# luks-format refuses what it cannot write, and asks before overwriting.
chmod a-w v.img
if [ "$(id -u)" != 0 ]; then
    expect_fail 'v.img' "$URAID" luks-format --batch --key-file key v.img
fi
chmod u+w v.img
before=$(sha v.img)
echo no | "$URAID" luks-format --key-file key v.img 2>err.txt && fail "format without YES"
grep -q 'not confirmed' err.txt || fail "no refusal message"
[ "$(sha v.img)" = "$before" ] || fail "unconfirmed format wrote"
truncate -s 10M small.img
"$URAID" luks-format --batch --key-file key small.img 2>err.txt && fail "format of 10 MiB"
grep -q 'too small' err.txt || fail "no 'too small' message"
echo PASS
