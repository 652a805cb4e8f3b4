#!/bin/bash
# luks-validate.sh — LUKS headers cryptsetup refuses are refused whole,
# before any key slot is tried, with the rule that failed named; a key slot
# not bound to the data segment (luksAddKey --unbound) never opens the
# volume; features uraid lacks (integrity, reencryption, unknown segment
# types and requirements) are refused by name; headers cryptsetup opens
# (argon2i, LUKS1 with whirlpool, capi: cipher names) open.
# Each malformed header is a valid one from cryptsetup luksFormat with one
# rule broken (luks2_edit rewrites both JSON copies and their checksums).
source "$SRCDIR/tests/sh/luks-lib.sh"
requires cryptsetup python3 sha256sum

cd "$tmp"
printf 'passphrase zero' > k0
printf 'passphrase one' > k1
CS_FAST=(--pbkdf pbkdf2 --pbkdf-force-iterations 1000)

# expect_fail MESSAGE CMD... — exits 1, says MESSAGE, v.img unchanged
expect_fail() {
    local msg=$1 before rc=0; shift
    before=$(sha v.img)
    "$@" >out.txt 2>err.txt || rc=$?
    [ $rc = 1 ] || { cat err.txt >&2; fail "'$*' exit $rc, want 1 ($msg)"; }
    grep -q -- "$msg" err.txt || { cat err.txt >&2; fail "'$*' does not say '$msg'"; }
    [ "$(sha v.img)" = "$before" ] || fail "'$*' changed the member"
}
# refused MESSAGE — luks-dump and serve (with the right passphrase) refuse
# v.img saying MESSAGE, and so does cryptsetup (when CS is set)
refused() {
    expect_fail "$1" "$URAID" luks-dump v.img
    expect_fail "$1" userve --readonly --key-file k0 v.img --run true
    if [ "${CS:-1}" = 1 ]; then
        cryptsetup open --test-passphrase --key-file k0 v.img 2>/dev/null &&
            fail "cryptsetup opens the header made for '$1' (the test is wrong)"
    fi
    return 0
}
opens() { userve --readonly --key-file "${2:-k0}" "$1" --run true 2>err.txt ||
              { cat err.txt >&2; fail "$1 does not open"; }; }

truncate -s 20M base.img
cryptsetup luksFormat --batch-mode --type luks2 "${CS_FAST[@]}" --key-file k0 base.img
cryptsetup luksAddKey --batch-mode "${CS_FAST[@]}" --key-file k0 base.img k1
cp base.img v.img
"$URAID" luks-dump v.img >/dev/null || fail "the base image does not load"
opens v.img k1
edit() { cp base.img v.img; luks2_edit v.img "$1"; }

# --- 1. an unbound key slot is shown but never opens the volume
truncate -s 20M u.img
cryptsetup luksFormat --batch-mode --type luks2 "${CS_FAST[@]}" --key-file k0 u.img
cryptsetup luksAddKey --batch-mode --unbound --key-size 512 "${CS_FAST[@]}" \
    --key-file k0 u.img k1
cp u.img v.img
"$URAID" luks-dump v.img >dump.txt || fail "luks-dump of a header with an unbound key slot"
grep -q '1: luks2 (unbound)' dump.txt || fail "luks-dump does not say key slot 1 is unbound"
expect_fail 'no key slot for the data segment matches this passphrase' \
    userve --readonly --key-file k1 v.img --run true
expect_fail 'no key slot for the data segment matches' \
    "$URAID" luks-dump --dump-volume-key --batch --key-file k1 v.img
grep -q 'MK dump' out.txt && fail "the unbound key was shown as the volume key"
opens v.img k0

# Removing a key slot drops it from the tokens too: a token naming a
# missing key slot is a header cryptsetup refuses.
cp base.img v.img
cryptsetup token add --key-description uraid-test --key-slot 1 v.img
"$URAID" luks-remove-key --key-file k1 v.img >/dev/null 2>err.txt ||
    { cat err.txt >&2; fail "luks-remove-key of a key slot a token names"; }
cryptsetup luksDump v.img >/dev/null || fail "cryptsetup refuses the header after luks-remove-key"
"$URAID" luks-dump v.img >/dev/null || fail "uraid refuses the header after luks-remove-key"

# --- 1. malformed headers, one rule each
edit "j['keyslots']['1']['area']['offset'] = str(int(j['keyslots']['0']['area']['offset']) + 4096)"
refused 'keyslot 1 area overlaps keyslot 0'
edit "j['digests']['0']['keyslots'].append('5')"
refused 'digest 0 lists keyslot 5, which does not exist'
edit "j['digests']['0']['segments'].append('3')"
refused 'digest 0 lists segment 3, which does not exist'
edit "j['tokens']['0'] = {'type': 'luks2-keyring', 'keyslots': ['7'], 'key_description': 'x'}"
refused 'token 0 lists keyslot 7, which does not exist'
edit "j['digests']['0']['keyslots'].remove('1')"
refused 'keyslot 1 is in no digest'
edit "d = dict(j['digests']['0']); d['segments'] = []; d['keyslots'] = ['0']; j['digests']['1'] = d"
refused 'keyslot 0 is in 2 digests'
edit "trailer = b'x'"
refused 'non-zero bytes after the JSON text'
edit "j['segments']['0']['sector_size'] = str(j['segments']['0']['sector_size'])"
refused 'segment 0: sector_size is not a JSON integer'
edit "j['keyslots']['0']['key_size'] = '64'"
refused 'keyslot 0: key_size is not a JSON integer'
edit "j['segments']['0']['offset'] = int(j['segments']['0']['offset'])"
refused 'segment 0: offset is not a decimal string'
edit "j['segments']['0']['flags'] = [1]"
refused 'segment 0: flags is not an array of strings'
edit "j['config']['keyslots_size'] = '131072'"
refused 'keyslot 0 area ends beyond the keyslots area'
edit "j['config']['keyslots_size'] = str(int(j['config']['keyslots_size']) + 4096)"
refused 'keyslots area reaches into data segment 0'
edit "j['segments']['0']['size'] = '0'"
refused 'segment 0: size 0'

# LUKS1: key material over another slot's, or over the payload
# (the phdr's key blocks: 48 bytes each from offset 208, material offset
# in sectors at +40).
luks1_set() {   # IMG SLOT SECTOR: move a key slot's material
    python3 - "$@" <<'PY'
import struct, sys
path, slot, sector = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
with open(path, 'r+b') as f:
    f.seek(208 + 48 * slot + 40)
    f.write(struct.pack('>I', sector))
PY
}
luks1_get() {
    python3 -c "import struct,sys; f=open(sys.argv[1],'rb'); f.seek(208+48*int(sys.argv[2])+40); print(struct.unpack('>I', f.read(4))[0])" "$@"
}
truncate -s 8M l1.img
cryptsetup luksFormat --batch-mode --type luks1 --pbkdf-force-iterations 1000 --key-file k0 l1.img
cp l1.img v.img
luks1_set v.img 1 $(( $(luks1_get v.img 0) + 8 ))
refused 'LUKS1 key slot 1 material overlaps key slot 0'
cp l1.img v.img
payload=$(python3 -c "import struct; f=open('v.img','rb'); f.seek(104); print(struct.unpack('>I', f.read(4))[0])")
luks1_set v.img 7 $(( payload - 8 ))
refused 'LUKS1 key slot 7 material overlaps the payload'

# An LVM2 label written over a LUKS2 primary header: its checksum breaks,
# and recovering from the secondary copy would destroy the label.
cp base.img v.img
python3 - <<'PY'
import struct, zlib
sec = bytearray(512)     # an LVM2 label in sector 1, as pvcreate writes it
sec[0:8] = b'LABELONE'
sec[8:16] = struct.pack('<Q', 1)
sec[20:24] = struct.pack('<I', 32)
sec[24:32] = b'LVM2 001'
sec[32:64] = b'0123456789abcdefghijklmnopqrstuv'
sec[64:72] = struct.pack('<Q', 20 << 20)
crc = zlib.crc32(bytes(sec[20:]), 0xf597a6cf ^ 0xffffffff) ^ 0xffffffff
sec[16:20] = struct.pack('<I', crc)
with open('v.img', 'r+b') as f:
    f.seek(512)
    f.write(sec)
PY
refused 'an LVM2 label'

# --- 3. features uraid does not implement, by name
edit "j['segments']['0']['integrity'] = {'type': 'hmac(sha256)', 'journal_encryption': 'none', 'journal_integrity': 'none'}; j['keyslots']['0']['key_size'] = 96; j['keyslots']['1']['key_size'] = 96"
CS=0 refused 'LUKS2 integrity (authenticated encryption) is not supported'
edit "j['segments']['0']['flags'] = ['backup-final']"
CS=0 refused 'LUKS2 reencryption'
edit "j['keyslots']['1']['type'] = 'reencrypt'"
CS=0 refused 'LUKS2 reencryption'
edit "j['segments']['0']['type'] = 'foo'"
CS=0 refused "segment 0 has type 'foo'"
edit "j['config']['requirements'] = {'mandatory': ['foo']}"
CS=0 refused "LUKS2 requirement 'foo'"
edit "j['config']['requirements'] = {'mandatory': ['online-reencrypt-v2']}"
refused "LUKS2 reencryption"

# --- 2/4. KDFs: names cryptsetup does not write, and costs beyond its limits
edit "j['keyslots']['0']['kdf'] = {'type': 'argon2', 'time': 4, 'memory': 32768, 'cpus': 1, 'salt': j['keyslots']['0']['kdf']['salt']}"
cp v.img a2.img
expect_fail "key slot 0: KDF 'argon2' is not supported" \
    userve --readonly --key-file k0 v.img --run true
opens v.img k1   # the other key slot still opens
edit "j['keyslots']['0']['kdf']['iterations'] = 2**31"
CS=0 refused 'keyslot 0 kdf: iterations 2147483648 is out of range'
edit "j['keyslots']['0']['kdf'] = {'type': 'argon2id', 'time': 4, 'memory': 4 * 1024 * 1024 + 1, 'cpus': 1, 'salt': j['keyslots']['0']['kdf']['salt']}"
CS=0 refused 'keyslot 0 kdf: memory 4194305 is out of range'

# --- 2. headers cryptsetup opens
truncate -s 20M i.img
cryptsetup luksFormat --batch-mode --type luks2 --pbkdf argon2i --pbkdf-memory 32768 \
    --pbkdf-force-iterations 4 --key-file k0 i.img
opens i.img
truncate -s 8M w.img
if cryptsetup luksFormat --batch-mode --type luks1 --hash whirlpool \
    --pbkdf-force-iterations 1000 --key-file k0 w.img 2>/dev/null; then
    opens w.img
fi
# capi: names (cryptsetup needs device-mapper to format one; the cipher is
# the same as aes-xts-plain64, so a renamed header opens the same data)
cp base.img v.img
luks2_edit v.img "j['segments']['0']['encryption'] = 'capi:xts(aes)-plain64'; j['keyslots']['0']['area']['encryption'] = 'capi:xts(aes)-plain64'"
opens v.img
echo PASS
