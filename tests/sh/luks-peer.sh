#!/bin/bash
# luks-peer.sh — the Linux kernel's dm-crypt and uraid read each other's
# LUKS2 volumes, in one linux-peer VM boot (tests/linux-peer):
#   ours:   `uraid luks-format` (sector 512 pbkdf2 256-bit key; sector 4096
#           argon2id 512-bit key), a pattern written through `uraid serve`;
#           in the guest cryptsetup opens them and dm-crypt must read the
#           same sha256, then writes a second pattern into the 512-byte
#           one, which uraid must read back;
#   theirs: cryptsetup luksFormat in the guest (sectors 512 and 4096),
#           dm-crypt writes the second pattern; uraid unlocks and reads it.
# Where uraid refuses 4096-byte sectors (its crypt layer cannot count IVs
# as LUKS2 does), the refusal must be that clear error; the rest must pass.
# Skips (77) when the linux-peer harness or a package it needs is missing.
source "$SRCDIR/tests/sh/luks-lib.sh"
source "$SRCDIR/tests/sh/peer-check.sh"
requires nbdcopy

cd "$tmp"
export PEER_KEY='peer passphrase 1'
printf '%s' "$PEER_KEY" > key
# 2 MiB patterns: 16-byte lines "A00000000000001\n" (A: ours, B: theirs)
pattern() { awk -v p="$1" -v n=131072 'BEGIN { for (i = 0; i < n; i++) printf "%s%014d\n", p, i }'; }
pattern A > a.pat
pattern B > b.pat
want_a=$(sha a.pat) want_b=$(sha b.pat)
limit='does not count IVs in 512-byte units'

truncate -s 24M o512.img o4k.img k512.img k4k.img
"$URAID" luks-format --batch --key-file key "${FAST_PBKDF2[@]}" --key-size 256 o512.img
export PEER_O4K=1
if ! "$URAID" luks-format --batch --key-file key "${FAST_ARGON[@]}" --sector-size 4096 \
        o4k.img 2>err.txt; then
    grep -q "$limit" err.txt || { cat err.txt >&2; fail "4096-byte format failed"; }
    echo "note: uraid refuses 4096-byte LUKS2 sectors here: $(cat err.txt)"
    PEER_O4K=0
fi
for img in o512.img o4k.img; do
    [ $img = o4k.img ] && [ $PEER_O4K = 0 ] && continue
    userve --key-file key "$img" --run 'nbdcopy a.pat "$uri"' 2>/dev/null
done

cat > job.sh <<'JOB'
#!/bin/sh
set -e
printf '%s' "$PEER_KEY" > /tmp/key
# pattern B once: awk takes seconds for 2 MiB under TCG, and it is written three times
awk -v n=131072 'BEGIN { for (i = 0; i < n; i++) printf "B%014d\n", i }' > /tmp/b.pat
devs=vda
[ "$PEER_O4K" = 1 ] && devs="vda vdb"
for d in $devs; do
    cryptsetup open --key-file /tmp/key /dev/$d c$d
    echo "read $d $(dd if=/dev/mapper/c$d bs=1M count=2 iflag=direct 2>/dev/null | sha256sum | cut -d' ' -f1)"
done
dd if=/tmp/b.pat of=/dev/mapper/cvda bs=1M seek=2 iflag=fullblock oflag=direct 2>/dev/null
sync
for d in $devs; do cryptsetup close c$d; done
for x in "vdc 512" "vdd 4096"; do
    set -- $x
    cryptsetup luksFormat --batch-mode --type luks2 --pbkdf pbkdf2 \
        --pbkdf-force-iterations 1000 --sector-size $2 --key-file /tmp/key /dev/$1
    cryptsetup open --key-file /tmp/key /dev/$1 c$1
    dd if=/tmp/b.pat of=/dev/mapper/c$1 bs=1M iflag=fullblock oflag=direct 2>/dev/null
    sync
    cryptsetup close c$1
done
echo guest-done
JOB
rc=0
LINUX_PEER_TIMEOUT=${LINUX_PEER_TIMEOUT:-240} "$PEER/run.sh" job.sh o512.img o4k.img \
    k512.img k4k.img > guest.out 2>&1 || rc=$?
[ $rc = 0 ] || { cat guest.out >&2; fail "guest job failed (exit $rc)"; }
grep -q "^read vda $want_a" guest.out ||
    { cat guest.out >&2; fail "dm-crypt reads other data on our 512-sector volume"; }
if [ $PEER_O4K = 1 ]; then
    grep -q "^read vdb $want_a" guest.out ||
        { cat guest.out >&2; fail "dm-crypt reads other data on our 4096-sector volume"; }
fi

userve --readonly --key-file key o512.img --run 'nbdcopy "$uri" o512.raw' 2>/dev/null
[ "$(head -c 2M o512.raw | sha)" = "$want_a" ] || fail "our own data changed"
[ "$(tail -c +2097153 o512.raw | head -c 2M | sha)" = "$want_b" ] ||
    fail "uraid reads other data than dm-crypt wrote into our volume"
userve --readonly --key-file key k512.img --run 'nbdcopy "$uri" k512.raw' 2>/dev/null
[ "$(head -c 2M k512.raw | sha)" = "$want_b" ] ||
    fail "uraid reads other data than dm-crypt wrote (512-byte sectors)"
"$URAID" luks-dump k4k.img | grep -q 'sector: 4096' || fail "guest header not read"
if [ $PEER_O4K = 1 ]; then
    userve --readonly --key-file key k4k.img --run 'nbdcopy "$uri" k4k.raw' 2>/dev/null
    [ "$(head -c 2M k4k.raw | sha)" = "$want_b" ] ||
        fail "uraid reads other data than dm-crypt wrote (4096-byte sectors)"
else
    before=$(sha k4k.img)
    userve --key-file key k4k.img --run true 2>err.txt && fail "4096 volume opened"
    grep -q "$limit" err.txt || { cat err.txt >&2; fail "no clear refusal for 4096"; }
    [ "$(sha k4k.img)" = "$before" ] || fail "refused open changed the image"
fi
echo PASS
