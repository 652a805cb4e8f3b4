#!/bin/bash
# luks-qemu.sh — uraid and qemu's LUKS driver agree on the plaintext of the
# same image, both ways.  qemu-img creates LUKS1 (qemu 7.2 opens no LUKS2),
# so (for xts-plain64 and cbc-essiv): qemu writes and uraid reads; uraid writes through `uraid serve` into
# the qemu-made image and qemu reads it back.
source "$SRCDIR/tests/sh/luks-lib.sh"
requires qemu-img qemu-io nbdcopy cmp

cd "$tmp"
printf 'qemu passphrase' > key
sec=(--object secret,id=s0,file=key)
opts=driver=luks,key-secret=s0,file.filename=q.img

# Two LUKS1 flavours: qemu's default (aes-256-xts-plain64, sha256) and
# aes-256-cbc-essiv:sha256 with sha1.
for flavour in "" ",cipher-mode=cbc,ivgen-alg=essiv,ivgen-hash-alg=sha256,hash-alg=sha1"; do
    rm -f q.img
    # qemu's PBKDF benchmark sometimes gives up on a busy machine ("Unable
    # to get accurate CPU usage"): try a few times.
    # Its CPU clock is too coarse on some machines to time anything at all;
    # then qemu cannot make images here, which says nothing about uraid.
    for try in 1 2 3 4 5; do
        qemu-img create -q -f luks "${sec[@]}" -o key-secret=s0,iter-time=100$flavour \
            q.img 8M 2>qerr.txt && break
        if [ $try = 5 ]; then
            cat qerr.txt >&2
            grep -q 'Unable to get accurate CPU usage' qerr.txt &&
                { echo "SKIP: qemu-img cannot benchmark its PBKDF on this machine"; exit 77; }
            fail "qemu-img create -f luks$flavour"
        fi
        sleep 1
    done
    qemu-io "${sec[@]}" --image-opts "$opts" -c 'write -P 0xa5 0 1M' \
        -c 'write -P 0x3c 3M 64k' -c 'write -P 0x11 8128k 64k' >/dev/null
    qemu-img convert "${sec[@]}" --image-opts "$opts" -O raw qemu.raw
    "$URAID" luks-dump q.img > dump.txt
    grep -q 'Version:.*1' dump.txt || fail "not read as LUKS1"
    [ -z "$flavour" ] || grep -q 'aes-cbc-essiv:sha256' dump.txt || fail "cipher not read"

    # qemu wrote, uraid reads
    userve --readonly --key-file key q.img --run 'nbdcopy "$uri" ours.raw'
    cmp qemu.raw ours.raw || fail "uraid reads other plaintext than qemu ($flavour)"

    # uraid writes, qemu reads
    head -c 8M /dev/urandom > new.raw
    userve --key-file key q.img --run 'nbdcopy new.raw "$uri"'
    qemu-img convert "${sec[@]}" --image-opts "$opts" -O raw back.raw
    cmp new.raw back.raw || fail "qemu reads other plaintext than uraid wrote ($flavour)"
done
# and the wrong passphrase is refused by both, the image unchanged
printf 'nope' > wrong
before=$(sha q.img)
userve --key-file wrong q.img --run true 2>err.txt && fail "wrong passphrase opened"
grep -q 'no key slot matches this passphrase' err.txt || fail "message"
[ "$(sha q.img)" = "$before" ] || fail "refused open changed the image"

# LUKS2 made by uraid: compare with qemu only where qemu opens LUKS2.
truncate -s 20M u.img
"$URAID" luks-format --batch --key-file key "${FAST_PBKDF2[@]}" --sector-size 512 u.img
opts2=driver=luks,key-secret=s0,file.filename=u.img
if qemu-img info "${sec[@]}" --image-opts "$opts2" >/dev/null 2>&1; then
    head -c 4M /dev/urandom > p2.raw
    userve --key-file key u.img --run 'nbdcopy p2.raw "$uri"'
    qemu-img convert "${sec[@]}" --image-opts "$opts2" -O raw q2.raw
    cmp -n 4194304 p2.raw q2.raw || fail "qemu reads our LUKS2 differently"
else
    echo "note: this qemu does not open LUKS2; LUKS2 data interop is in luks-peer.sh"
fi
echo PASS
