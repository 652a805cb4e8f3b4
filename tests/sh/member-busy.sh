#!/bin/bash
# member-busy.sh — a block device in use is not written: over a loop device
# whose ext4 is mounted, `uraid serve DEV` refuses, naming the device and
# that it is busy, and writes nothing; `serve --readonly DEV` serves it and
# says it is busy; once unmounted, DEV serves writable again.  Needs root,
# losetup and mkfs.ext4 (else skips, 77).  Detaches only its own loop device.
set -euo pipefail

command -v losetup >/dev/null || { echo "skip: losetup missing"; exit 77; }
command -v mkfs.ext4 >/dev/null || { echo "skip: mkfs.ext4 missing"; exit 77; }
command -v nbdinfo >/dev/null || { echo "skip: nbdinfo missing"; exit 77; }
[ "$(id -u)" = 0 ] || { echo "skip: needs root to mount"; exit 77; }

D=$(mktemp -d)
L=""
cleanup() {
    mountpoint -q "$D/mnt" 2>/dev/null && umount "$D/mnt"
    [ -z "$L" ] || losetup -d "$L" 2>/dev/null || true
    rm -rf "$D"
}
trap cleanup EXIT
cd "$D"
fail=0

truncate -s 64M fs.img
L=$(losetup -f --show fs.img 2>/dev/null) || { echo "skip: cannot set up a loop device"; exit 77; }
# No lazy initialisation, and mounted read-only without the journal: the
# file system itself writes nothing, so any change is ours.
mkfs.ext4 -q -E lazy_itable_init=0,lazy_journal_init=0 "$L"
mkdir mnt
mount -o ro,noload "$L" mnt 2>/dev/null || { echo "skip: cannot mount ext4 here"; exit 77; }
head -c 1M /dev/urandom > data
before=$(sha256sum < fs.img)

if out=$($URAID serve --run 'nbdcopy data "$uri"' "$L" 2>&1); then
    echo "FAIL: serve of a mounted device succeeded"; fail=1
else
    grep -q "$L: in use (mounted" <<< "$out" || { echo "FAIL: no '$L: in use' in: $out"; fail=1; }
fi
[ "$before" = "$(sha256sum < fs.img)" ] || { echo "FAIL: serve wrote to a mounted device"; fail=1; }
echo "ok: a mounted device is refused writable"

out=$($URAID serve --readonly --run 'nbdinfo --size "$uri"' "$L" 2>&1) ||
    { echo "FAIL: --readonly serve of a mounted device: $out"; fail=1; }
grep -q "$L: in use (mounted" <<< "$out" || { echo "FAIL: --readonly does not say it is busy: $out"; fail=1; }
grep -qx 67108864 <<< "$out" || { echo "FAIL: --readonly size: $out"; fail=1; }
[ "$before" = "$(sha256sum < fs.img)" ] || { echo "FAIL: --readonly serve changed the device"; fail=1; }
echo "ok: --readonly serves a mounted device and says it is busy"

umount mnt
out=$($URAID serve --run 'nbdcopy data "$uri"' "$L" 2>&1) ||
    { echo "FAIL: serve of the unmounted device: $out"; fail=1; }
cmp -s -n 1048576 data fs.img || { echo "FAIL: the unmounted device does not hold what was written"; fail=1; }
echo "ok: once unmounted it serves writable"
exit $fail
