#!/bin/bash
# luks-header.sh — the recovery commands against cryptsetup, on images
# cryptsetup made (LUKS1 and LUKS2), both ways:
#  - luks-header-backup gives the same bytes as cryptsetup luksHeaderBackup
#    (LUKS1 junk between the phdr and key slot 0, and past the last key
#    material, zeroed as cryptsetup zeroes it), reads only, and refuses an
#    existing file;
#  - cryptsetup's backup restored by uraid and ours by cryptsetup bring a
#    damaged header back (one JSON byte, one copy or both; LUKS1 key
#    material) so that cryptsetup opens it; a backup of another volume, of
#    another layout or version, a truncated one and a file that is not one
#    are refused without writing (sha256 unchanged); --force restores;
#  - luks-kill-slot, luks-uuid and is-luks against luksKillSlot, luksUUID
#    and isLuks on the same images (LUKS1 and LUKS2; a killed slot's
#    material overwritten, its neighbour's not; the last slot and a
#    malformed UUID refused).
source "$SRCDIR/tests/sh/luks-lib.sh"
requires cryptsetup cmp

cd "$tmp"
printf 'first' > k1
printf 'second' > k2
printf 'third' > k3

cs_ok() { cryptsetup open --test-passphrase --key-file "$2" "$1" >/dev/null 2>&1; }
# cs_slots IMG — the key slots cryptsetup luksDump lists, "0 3"
cs_slots() {
    cryptsetup luksDump "$1" |
        sed -n -e 's/^  \([0-9]*\): luks2$/\1/p' -e 's/^Key Slot \([0-9]\): ENABLED$/\1/p' |
        paste -sd' '
}
# refused WHAT PATTERN CMD... — CMD fails, says PATTERN, and the images
# named by $watch keep their bytes.
refused() {
    local what=$1 pat=$2 before
    shift 2
    before=$(sha $watch)
    if "$@" > out 2>&1; then fail "$what: not refused"; fi
    grep -q -- "$pat" out || fail "$what: the message does not say '$pat': $(cat out)"
    [ "$(sha $watch)" = "$before" ] || fail "$what: refused, but the device changed"
}

# A LUKS2 and a LUKS1 image over random bytes, so that what lies between
# the header's parts is not zeros.
head -c 20M /dev/urandom > l2.img
cryptsetup luksFormat -q --type luks2 "${FAST_PBKDF2[@]}" -d k1 l2.img
head -c 4M /dev/urandom > l1.img
cryptsetup luksFormat -q --type luks1 --pbkdf-force-iterations 1000 -d k1 l1.img
# cryptsetup zeroes these at luksFormat; junk there (an older signature)
# must stay out of a backup: after the 1024-byte phdr, and past the last
# key material (512-bit keys: 8 + 7 x 504 + 500 sectors) up to 4096.
head -c 3072 /dev/urandom | dd of=l1.img bs=1 seek=1024 conv=notrunc status=none
head -c 2048 /dev/urandom | dd of=l1.img bs=1 seek=$((4036 * 512)) conv=notrunc status=none
cryptsetup luksDump l1.img | grep -q 'Key material offset:.8$' ||
    fail "cryptsetup's LUKS1 slot 0 is not at sector 8"

# --- backup: cryptsetup's bytes, reads only, no overwrite
for v in 1 2; do
    cryptsetup luksHeaderBackup l$v.img --header-backup-file cs$v.bak
    before=$(sha l$v.img)
    "$URAID" luks-header-backup --header-backup-file u$v.bak l$v.img ||
        fail "LUKS$v: luks-header-backup"
    [ "$(sha l$v.img)" = "$before" ] || fail "LUKS$v: the backup changed the device"
    cmp cs$v.bak u$v.bak || fail "LUKS$v: our backup differs from cryptsetup's"
    [ "$(stat -c %a u$v.bak)" = 400 ] || fail "LUKS$v: backup mode $(stat -c %a u$v.bak), not 0400"
    watch=u$v.bak refused "LUKS$v: backup over an existing file" 'exists already' \
        "$URAID" luks-header-backup --header-backup-file u$v.bak l$v.img
done
[ "$(stat -c %s u2.bak)" = $((16 << 20)) ] || fail "LUKS2 backup is not 16 MiB"

# --- LUKS2: one JSON byte of the primary damaged; uraid restores
# cryptsetup's backup without --force (the secondary names the UUID)
cp l2.img t.img
printf 'X' | dd of=t.img bs=1 seek=4200 conv=notrunc status=none
"$URAID" luks-header-restore --header-backup-file cs2.bak t.img || fail "restore (primary damaged)"
cmp t.img l2.img || fail "restore (primary damaged): not the image backed up"
# both copies damaged: nothing to check the backup against, so --force
printf 'X' | dd of=t.img bs=1 seek=4200 conv=notrunc status=none
printf 'X' | dd of=t.img bs=1 seek=$((16384 + 4200)) conv=notrunc status=none
cs_ok t.img k1 && fail "cryptsetup opens a header with both copies damaged"
watch=t.img refused "restore onto a header that does not load" 'holds no LUKS header' \
    "$URAID" luks-header-restore --header-backup-file cs2.bak t.img
# ... and the reason names each copy's damage (the secondary's checksum,
# not the empty offsets searched after it)
grep -q 'primary: checksum mismatch; secondary: checksum mismatch' out ||
    fail "both copies damaged: $(cat out)"
"$URAID" luks-header-restore --force --header-backup-file cs2.bak t.img 2> out ||
    fail "restore --force: $(cat out)"
cs_ok t.img k1 || fail "cryptsetup does not open the header uraid restored"
cmp t.img l2.img || fail "restore --force: not the image backed up"

# ours restored by cryptsetup, over a header that changed since
cp l2.img t.img
cryptsetup luksAddKey -q "${FAST_PBKDF2[@]}" -d k1 t.img k2
printf 'X' | dd of=t.img bs=1 seek=4200 conv=notrunc status=none
cryptsetup luksHeaderRestore -q t.img --header-backup-file u2.bak || fail "cryptsetup restores ours"
cmp t.img l2.img || fail "cryptsetup's restore of our backup: not the image backed up"
cs_ok t.img k2 && fail "a key slot added after the backup survived its restore"

# --- LUKS1: key material of slot 0 damaged
cp l1.img t1.img
head -c 512 /dev/urandom | dd of=t1.img bs=1 seek=$((8 * 512)) conv=notrunc status=none
cs_ok t1.img k1 && fail "LUKS1 opens with its key material damaged"
"$URAID" luks-header-restore --header-backup-file cs1.bak t1.img || fail "LUKS1 restore"
cs_ok t1.img k1 || fail "cryptsetup does not open the LUKS1 header uraid restored"
cmp <(head -c $((4036 * 512)) t1.img) <(head -c $((4036 * 512)) cs1.bak) ||
    fail "LUKS1 restore: the header area is not the backup's"
cmp <(tail -c +$((4036 * 512 + 1)) t1.img) <(tail -c +$((4036 * 512 + 1)) l1.img) ||
    fail "LUKS1 restore wrote past the header area"
head -c 512 /dev/urandom | dd of=t1.img bs=1 seek=$((8 * 512)) conv=notrunc status=none
cryptsetup luksHeaderRestore -q t1.img --header-backup-file u1.bak || fail "cryptsetup restores ours (LUKS1)"
cs_ok t1.img k1 || fail "cryptsetup does not open what it restored from our LUKS1 backup"

# --- refusals: another volume, layout, version; a truncated backup;
# a file that is no backup.  Each leaves the device as it was.
truncate -s 20M o2.img
cryptsetup luksFormat -q --type luks2 "${FAST_PBKDF2[@]}" -d k3 o2.img
watch=o2.img refused "backup of another volume" 'UUID .* in the backup' \
    "$URAID" luks-header-restore --header-backup-file u2.bak o2.img
watch=o2.img refused "LUKS1 backup onto LUKS2" 'LUKS1 in the backup, LUKS2 on the device' \
    "$URAID" luks-header-restore --header-backup-file u1.bak o2.img
truncate -s 20M m2.img
cryptsetup luksFormat -q --type luks2 "${FAST_PBKDF2[@]}" -d k1 --luks2-metadata-size 32k \
    --uuid "$(cryptsetup luksUUID l2.img)" m2.img
watch=m2.img refused "backup of another layout" 'metadata area 16384 bytes in the backup, 32768' \
    "$URAID" luks-header-restore --header-backup-file u2.bak m2.img
head -c 65536 u2.bak > short.bak
watch=o2.img refused "truncated backup" 'too small for its LUKS2 header' \
    "$URAID" luks-header-restore --header-backup-file short.bak o2.img
watch=o2.img refused "a file that is no backup" 'is not a LUKS header backup' \
    "$URAID" luks-header-restore --header-backup-file k1 o2.img
truncate -s 8M small.img
watch=small.img refused "backup larger than the device" 'larger than the device' \
    "$URAID" luks-header-restore --force --header-backup-file u2.bak small.img
"$URAID" luks-header-restore --force --header-backup-file u2.bak o2.img 2> out ||
    fail "restore --force onto another volume"
grep -q 'restoring anyway' out || fail "restore --force does not warn: $(cat out)"
[ "$(cryptsetup luksUUID o2.img)" = "$(cryptsetup luksUUID l2.img)" ] ||
    fail "restore --force: cryptsetup does not see the backup's UUID"
cs_ok o2.img k1 || fail "restore --force: the backup's passphrase does not open"

# --- kill-slot against luksKillSlot: the same slots left, the material
# overwritten
for v in 1 2; do
    cp l$v.img ka.img
    cryptsetup luksAddKey -q "${FAST_PBKDF2[@]}" -d k1 --key-slot 1 ka.img k2
    cryptsetup luksAddKey -q "${FAST_PBKDF2[@]}" -d k1 --key-slot 3 ka.img k3
    cp ka.img kb.img
    [ $v = 2 ] || cp ka.img before1.img
    "$URAID" luks-kill-slot ka.img 1 > out || fail "LUKS$v: luks-kill-slot 1"
    [ $v = 2 ] || cp ka.img killed1.img
    grep -q 'key slot 1 removed' out || fail "LUKS$v: luks-kill-slot says: $(cat out)"
    cryptsetup -q luksKillSlot kb.img 1 < /dev/null 2> /dev/null
    [ "$(cs_slots ka.img)" = "0 3" ] ||
        fail "LUKS$v: after luks-kill-slot 1 cryptsetup sees '$(cs_slots ka.img)'"
    [ "$(cs_slots ka.img)" = "$(cs_slots kb.img)" ] || fail "LUKS$v: luks-kill-slot and luksKillSlot differ"
    cs_ok ka.img k2 && fail "LUKS$v: a killed slot's passphrase still opens"
    cs_ok ka.img k3 || fail "LUKS$v: luks-kill-slot lost another slot"
    watch=ka.img refused "LUKS$v: kill an inactive slot" 'key slot 1 is not active' \
        "$URAID" luks-kill-slot ka.img 1
    "$URAID" luks-kill-slot ka.img 0 > /dev/null || fail "LUKS$v: luks-kill-slot 0"
    watch=ka.img refused "LUKS$v: kill the last slot" 'the last one that opens the volume' \
        "$URAID" luks-kill-slot ka.img 3
    "$URAID" luks-kill-slot --force ka.img 3 > /dev/null || fail "LUKS$v: luks-kill-slot --force"
    [ -z "$(cs_slots ka.img)" ] || fail "LUKS$v: after killing every slot cryptsetup sees '$(cs_slots ka.img)'"
done
# LUKS1 key slot 1's material (sectors 512-1011) is overwritten, slot
# 3's (1520-2019) is not.
slot_bytes() { dd if="$1" bs=512 skip="$2" count=500 status=none | sha256sum; }
[ "$(slot_bytes before1.img 512)" != "$(slot_bytes killed1.img 512)" ] ||
    fail "LUKS1: key slot 1's material is still there"
[ "$(slot_bytes before1.img 1520)" = "$(slot_bytes killed1.img 1520)" ] ||
    fail "LUKS1: killing slot 1 changed slot 3's material"

# --- uuid against luksUUID
for v in 1 2; do
    [ "$("$URAID" luks-uuid l$v.img)" = "$(cryptsetup luksUUID l$v.img)" ] ||
        fail "LUKS$v: luks-uuid and luksUUID differ"
done
cp l2.img t.img
"$URAID" luks-uuid --batch --uuid 0123ABCD-4567-4def-8901-23456789ABCD t.img || fail "luks-uuid --uuid"
[ "$(cryptsetup luksUUID t.img)" = 0123abcd-4567-4def-8901-23456789abcd ] ||
    fail "cryptsetup reads UUID '$(cryptsetup luksUUID t.img)' after luks-uuid --uuid"
cs_ok t.img k1 || fail "luks-uuid --uuid broke the header"
cryptsetup -q luksUUID --uuid 11111111-2222-4333-8444-555555555555 t.img
[ "$("$URAID" luks-uuid t.img)" = 11111111-2222-4333-8444-555555555555 ] ||
    fail "luks-uuid does not read the UUID cryptsetup set"
watch=t.img refused "a malformed UUID" 'is not a UUID' \
    "$URAID" luks-uuid --batch --uuid 1111-2222 t.img
watch=t.img refused "luks-uuid --uuid unconfirmed" 'not confirmed' \
    "$URAID" luks-uuid --uuid 11111111-2222-4333-8444-666666666666 t.img < /dev/null
cp l1.img t1.img
"$URAID" luks-uuid --batch --uuid 11111111-2222-4333-8444-AAAAAAAAAAAA t1.img || fail "LUKS1: luks-uuid --uuid"
[ "$(cryptsetup luksUUID t1.img)" = 11111111-2222-4333-8444-aaaaaaaaaaaa ] ||
    fail "LUKS1: cryptsetup reads UUID '$(cryptsetup luksUUID t1.img)' after luks-uuid --uuid"
cs_ok t1.img k1 || fail "LUKS1: luks-uuid --uuid broke the header"

# --- is-luks against isLuks (cryptsetup on copies: it repairs what it loads)
cp l2.img p2.img
printf 'X' | dd of=p2.img bs=1 seek=4200 conv=notrunc status=none
cp p2.img b2.img
printf 'X' | dd of=b2.img bs=1 seek=$((16384 + 4200)) conv=notrunc status=none
# a requirement uraid does not know: still LUKS, as for isLuks
cp l2.img req.img
luks2_edit req.img 'j["config"]["requirements"] = {"mandatory": ["frobnicate"]}'
for img in l1.img l2.img p2.img b2.img req.img k1 short.bak; do
    cp "$img" cs.copy
    if cryptsetup isLuks cs.copy; then want=0; else want=1; fi
    if "$URAID" is-luks "$img" 2> /dev/null; then got=0; else got=$?; fi
    [ "$got" = "$want" ] || fail "is-luks $img: exit $got, cryptsetup isLuks $want"
done
[ "$("$URAID" is-luks -v l1.img)" = "l1.img: LUKS1" ] || fail "is-luks -v on LUKS1"
[[ $("$URAID" is-luks -v req.img) == "req.img: LUKS2 (uraid cannot open it: "*"'frobnicate'"* ]] ||
    fail "is-luks -v on an unknown requirement: $("$URAID" is-luks -v req.img)"
# A device shorter than its header area is no LUKS device to cryptsetup
# ("too small"), for luksDump too.
for v in 1 2; do
    cp l$v.img short.img
    truncate -s $(($(stat -c %s u$v.bak) / 4096 * 4096 - 4096)) short.img
    cryptsetup luksDump short.img > /dev/null 2>&1 && fail "LUKS$v: cryptsetup dumps a short device"
    "$URAID" luks-dump short.img > /dev/null 2> out && fail "LUKS$v: luks-dump shows a header larger than its device"
    grep -q 'too small for its LUKS' out || fail "LUKS$v: luks-dump on a short device says: $(cat out)"
done
if "$URAID" is-luks -v k1 > out; then fail "is-luks: k1 is LUKS"; fi
grep -q '^not LUKS: k1: no LUKS header found$' out || fail "is-luks -v on a non-LUKS file says: $(cat out)"
echo "ok: header backup/restore, kill-slot, uuid and is-luks agree with cryptsetup (LUKS1, LUKS2)"
