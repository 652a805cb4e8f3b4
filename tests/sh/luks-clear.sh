#!/bin/bash
# luks-clear.sh — nothing written through a LUKS2 volume appears in the
# clear on its member, and the data reads back (LUKS on md arrays:
# luks-stack.sh); a passphrase piped in is one line.
source "$SRCDIR/tests/sh/luks-lib.sh"
requires nbdcopy cmp grep

cd "$tmp"
printf 'clear passphrase' > key
for _ in $(seq 16); do printf 'URAID-CLEARTEXT-MARKER-51c2 %.0s' $(seq 4096); done > plain.raw
truncate -s 2M plain.raw
truncate -s 20M v.img
"$URAID" luks-format --batch --key-file key "${FAST_ARGON[@]}" v.img
userve --key-file key v.img --run 'nbdcopy plain.raw "$uri"'
userve --readonly --key-file key v.img --run 'nbdcopy "$uri" back.raw'
cmp -n 2097152 plain.raw back.raw || fail "data does not read back"
grep -aqF 'URAID-CLEARTEXT-MARKER' v.img && fail "plaintext found on the member"
grep -aqF 'clear passphrase' v.img && fail "passphrase found on the member"
# A passphrase piped into standard input is one line, the newline dropped:
# the same bytes in a key file (without newline) open the volume.
printf 'piped words\n' | "$URAID" luks-format --batch "${FAST_PBKDF2[@]}" v.img
printf 'piped words' > piped
userve --readonly --key-file piped v.img --run true || fail "piped passphrase differs"
printf 'piped words\n' | userve --readonly v.img --run true || fail "piped unlock"
echo PASS
