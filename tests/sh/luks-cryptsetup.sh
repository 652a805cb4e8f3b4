#!/bin/bash
# luks-cryptsetup.sh — LUKS header interop with cryptsetup, both ways,
# without device-mapper (cryptsetup reads image files directly):
#  - headers uraid writes: cryptsetup luksDump reads them and
#    `open --test-passphrase` accepts the passphrase (argon2id, pbkdf2,
#    after luks-add-key / luks-change-key; a removed one is refused), and
#    a key slot cryptsetup adds to our header opens with uraid;
#  - headers cryptsetup writes (LUKS2 argon2id/pbkdf2 x sector 512/4096,
#    LUKS1 xts and cbc-essiv): uraid unlocks them and finds the same
#    volume key as `cryptsetup luksDump --dump-volume-key`.
source "$SRCDIR/tests/sh/luks-lib.sh"
requires cryptsetup python3

cd "$tmp"
printf 'first passphrase' > k1
printf 'second\npassphrase\n' > k2   # key files are taken whole, newlines too
printf 'third' > k3

cs_ok() { cryptsetup open --test-passphrase --key-file "$2" "$1" >/dev/null 2>&1; }
same_vk() {   # IMG KEYFILE: uraid and cryptsetup agree on the volume key
    local a b
    a=$("$URAID" luks-dump --dump-volume-key --batch --key-file "$2" "$1" | vk_from)
    b=$(cryptsetup luksDump --dump-volume-key --batch-mode --key-file "$2" "$1" | vk_from)
    [ -n "$a" ] && [ "$a" = "$b" ] || fail "$1: volume keys differ: uraid '$a' cryptsetup '$b'"
}

# --- ours -> cryptsetup
for kdf in argon pbkdf2; do
    truncate -s 20M ours.img
    if [ $kdf = argon ]; then args=("${FAST_ARGON[@]}"); else args=("${FAST_PBKDF2[@]}"); fi
    "$URAID" luks-format --batch --key-file k1 --label mylabel "${args[@]}" ours.img
    cryptsetup isLuks --type luks2 ours.img || fail "cryptsetup: not LUKS2 ($kdf)"
    cryptsetup luksDump ours.img > dump.txt || fail "cryptsetup luksDump ($kdf)"
    grep -q 'mylabel' dump.txt || fail "label not shown by cryptsetup"
    grep -q "PBKDF:.*$( [ $kdf = argon ] && echo argon2id || echo pbkdf2)" dump.txt ||
        fail "cryptsetup shows the wrong KDF"
    cs_ok ours.img k1 || fail "cryptsetup refuses our passphrase ($kdf)"
    cs_ok ours.img k2 && fail "cryptsetup accepts a wrong passphrase"
    same_vk ours.img k1
    rm ours.img
done

truncate -s 20M ours.img
"$URAID" luks-format --batch --key-file k1 --sector-size 512 --key-size 256 \
    "${FAST_ARGON[@]}" ours.img
cryptsetup luksDump ours.img | grep -q 'sector: 512' || fail "sector size 512 not recorded"
"$URAID" luks-add-key --key-file k1 --new-key-file k2 "${FAST_PBKDF2[@]}" ours.img |
    grep -q 'key slot 1 added' || fail "luks-add-key"
cs_ok ours.img k1 || fail "slot 0 lost after add"
cs_ok ours.img k2 || fail "cryptsetup refuses the added passphrase"
"$URAID" luks-change-key --key-file k2 --new-key-file k3 "${FAST_ARGON[@]}" ours.img |
    grep -q 'key slot 1 changed' || fail "luks-change-key"
cs_ok ours.img k2 && fail "changed passphrase still opens"
cs_ok ours.img k3 || fail "cryptsetup refuses the changed passphrase"
"$URAID" luks-remove-key --key-file k1 ours.img | grep -q 'key slot 0 removed' ||
    fail "luks-remove-key"
cs_ok ours.img k1 && fail "removed passphrase still opens"
cs_ok ours.img k3 || fail "remaining slot lost"
# cryptsetup writes into our header; we read what it wrote
cryptsetup luksAddKey --batch-mode --key-file k3 --pbkdf pbkdf2 \
    --pbkdf-force-iterations 1000 ours.img k1 || fail "cryptsetup luksAddKey on our header"
same_vk ours.img k1
same_vk ours.img k3

# --- cryptsetup -> ours
n=0
for kdf in "--pbkdf argon2id --pbkdf-memory 32768 --pbkdf-force-iterations 4" \
           "--pbkdf pbkdf2 --pbkdf-force-iterations 1000"; do
    for sector in 512 4096; do
        n=$((n + 1))
        truncate -s 20M cs$n.img
        # shellcheck disable=SC2086
        cryptsetup luksFormat --batch-mode --type luks2 $kdf --sector-size $sector \
            --key-file k2 cs$n.img
        same_vk cs$n.img k2
        "$URAID" luks-dump cs$n.img | grep -q "sector: $sector" ||
            fail "cs$n: sector size $sector not read"
        "$URAID" luks-dump --dump-volume-key --batch --key-file k1 cs$n.img \
            >/dev/null 2>err.txt && fail "cs$n: wrong passphrase accepted"
        grep -q 'no key slot matches this passphrase' err.txt || fail "cs$n: message"
    done
done
truncate -s 8M l1.img
cryptsetup luksFormat --batch-mode --type luks1 --pbkdf-force-iterations 1000 \
    --key-file k1 l1.img
same_vk l1.img k1
truncate -s 8M l2.img
cryptsetup luksFormat --batch-mode --type luks1 --cipher aes-cbc-essiv:sha256 \
    --key-size 256 --hash sha1 --pbkdf-force-iterations 1000 --key-file k2 l2.img
same_vk l2.img k2
"$URAID" luks-dump l2.img | grep -q 'aes-cbc-essiv:sha256' || fail "LUKS1 cipher not shown"
"$URAID" luks-add-key --key-file k2 --new-key-file k1 l2.img 2>err.txt &&
    fail "luks-add-key changed a LUKS1 header"
grep -q 'LUKS1' err.txt || fail "LUKS1 refusal does not say why"
echo PASS
