# peer-check.sh — the one rule for when a test that boots the Linux kernel
# runs: $PEER is the linux-peer harness (tests/linux-peer, or $LINUX_PEER
# for another copy of it), and the test skips (77, saying why) when the
# harness or a Debian package it needs is missing.
PEER=${LINUX_PEER:-$SRCDIR/tests/linux-peer}
[ -x "$PEER/run.sh" ] || { echo "skip: no linux-peer harness at $PEER"; exit 77; }
peer_missing=$("$PEER/build-initramfs.sh" --missing)
[ -z "$peer_missing" ] || {
    echo "skip: linux-peer needs the Debian packages $peer_missing (scripts/setup.sh --test installs them)"
    exit 77
}
