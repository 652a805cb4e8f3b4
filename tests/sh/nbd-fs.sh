#!/bin/bash
# nbd-fs.sh — a real file system on `uraid serve`: nbdfuse exposes the
# export as a file, losetup makes it a block device, then mkfs.ext4, mount,
# write and read back files, umount, fsck -n.  Skips (77) where FUSE, loop
# devices or mounting are not available (unprivileged containers).
. "$(dirname "$0")/nbd-lib.sh"
requires nbdfuse losetup mkfs.ext4 fsck.ext4 mount umount fusermount3
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root for losetup and mount"; exit 77; }
[ -c /dev/fuse ] || { echo "SKIP: no /dev/fuse"; exit 77; }

s=$tmp/s.sock
start_server "$s" mem:256M
mkdir "$tmp/fuse" "$tmp/mnt"
nbdfuse "$tmp/fuse/disk" "nbd+unix:///?socket=$s" &
fuse_pid=$!
for _ in $(seq 100); do [ -e "$tmp/fuse/disk" ] && break; sleep 0.05; done
[ -e "$tmp/fuse/disk" ] || { kill $fuse_pid; echo "SKIP: nbdfuse could not mount"; exit 77; }
loop=""
fs_cleanup() {
    mountpoint -q "$tmp/mnt" && umount "$tmp/mnt"
    [ -n "$loop" ] && losetup -d "$loop" 2>/dev/null
    fusermount3 -u "$tmp/fuse" 2>/dev/null || true
    wait $fuse_pid 2>/dev/null || true
    cleanup
}
trap fs_cleanup EXIT
loop=$(losetup -f --show "$tmp/fuse/disk" 2>/dev/null) || { echo "SKIP: no loop devices"; exit 77; }
mkfs.ext4 -q -F "$loop"
mount "$loop" "$tmp/mnt" 2>/dev/null || { echo "SKIP: cannot mount"; exit 77; }
head -c 8M /dev/urandom > "$tmp/f1"
for i in 1 2 3; do cp "$tmp/f1" "$tmp/mnt/f$i"; done
seq 100000 > "$tmp/mnt/numbers"
umount "$tmp/mnt"
# Drop the loop device's cached blocks so the checks below read the server.
blockdev --flushbufs "$loop" 2>/dev/null || true
mount "$loop" "$tmp/mnt"
for i in 1 2 3; do cmp "$tmp/f1" "$tmp/mnt/f$i" || fail "file f$i differs"; done
[ "$(tail -n1 "$tmp/mnt/numbers")" = 100000 ] || fail "numbers"
umount "$tmp/mnt"
blockdev --flushbufs "$loop" 2>/dev/null || true
fsck.ext4 -n -f "$loop" >/dev/null 2>&1 || fail "fsck found errors"
echo PASS
