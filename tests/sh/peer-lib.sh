# peer-lib.sh — what the tests that boot the Linux kernel in a linux-peer
# VM (../shared/linux-peer) share: skip (77) when QEMU, a kernel image,
# linux-peer or a tool is missing; a scratch dir $D; the test pattern of
# $MB MiB (set MB before sourcing) in $D/pat, its sha256 in $want, and
# pattern() to make it again inside the guest (its job prints
# `pattern_def` first).
set -euo pipefail

PEER=${LINUX_PEER:-$SRCDIR/../shared/linux-peer}
[ -x "$PEER/run.sh" ] || { echo "skip: no linux-peer at $PEER"; exit 77; }
command -v qemu-system-x86_64 >/dev/null || { echo "skip: no qemu-system-x86_64"; exit 77; }
ls /boot/vmlinuz-* >/dev/null 2>&1 || { echo "skip: no kernel image in /boot"; exit 77; }
for t in nbdcopy cpio busybox; do
    command -v $t >/dev/null || { echo "skip: $t missing"; exit 77; }
done

D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
pattern() { awk -v n=$((MB * 65536)) 'BEGIN { for (i = 0; i < n; i++) printf "%015d\n", i }'; }
pattern > "$D/pat"
want=$(sha256sum < "$D/pat" | cut -d' ' -f1)
