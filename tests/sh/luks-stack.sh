#!/bin/bash
# luks-stack.sh — LUKS2 on md arrays: `uraid create` + `uraid luks-format`
# (on the members: the stack assembles the array) + `uraid serve`, for
# RAID1, RAID0, RAID10 and linear.  What is written through the volume
# reads back, and appears in the clear on no member.
source "$SRCDIR/tests/sh/luks-lib.sh"
requires nbdcopy cmp grep
"$URAID" help | grep -q '^  create ' || { echo "SKIP: uraid create missing"; exit 77; }

cd "$tmp"
printf 'stacked passphrase' > key
# A plaintext that is easy to find: a marker line repeated over 2 MiB.
for _ in $(seq 16); do printf 'URAID-CLEARTEXT-MARKER-8d1f %.0s' $(seq 4096); done > plain.raw
truncate -s 2M plain.raw

for level in 1 0 10 linear; do
    case $level in
    10) members=(m0.img m1.img m2.img m3.img) ;;
    *) members=(m0.img m1.img) ;;
    esac
    rm -f m*.img
    truncate -s 24M "${members[@]}"
    "$URAID" create --level=$level --assume-clean --force "${members[@]}" >/dev/null
    "$URAID" luks-format --batch --key-file key "${FAST_PBKDF2[@]}" "${members[@]}"
    "$URAID" luks-dump "${members[@]}" | grep -q 'Version:.*2' ||
        fail "raid$level: no LUKS2 header on the array"
    userve --key-file key "${members[@]}" --run 'nbdcopy plain.raw "$uri"'
    userve --readonly --key-file key "${members[@]}" \
        --run 'nbdcopy "$uri" back.raw'
    cmp -n 2097152 plain.raw back.raw || fail "raid$level: data does not read back"
    for m in "${members[@]}"; do
        grep -aqF 'URAID-CLEARTEXT-MARKER' "$m" && fail "raid$level: plaintext on $m"
    done
    # a member alone is md, not LUKS: the passphrase opens only the array
    "$URAID" luks-dump m0.img >/dev/null 2>&1 && [ $level = 0 ] &&
        fail "raid0: one member showed a LUKS header"
done
echo PASS
