#!/usr/bin/env python3
"""strict_mode.py URI SCRATCH_OFFSET - libnbd with its client-side checks off.

libnbd normally refuses to send a request that is out of range, carries
flags the server did not advertise, or names an unknown command.  With
set_strict_mode(0) it sends them as asked, so the server's own checks are
what answer.  Each must fail with the protocol's error and leave the
connection usable.  Needs python3-libnbd (the module nbdsh uses).
"""
import errno
import sys

import nbd

uri, scratch = sys.argv[1], int(sys.argv[2])
failed = 0


def check(cond, what):
    global failed
    if not cond:
        failed += 1
        print("strict_mode: FAIL: %s" % what, file=sys.stderr)


def err_name(e):
    """nbd.Error.errno is a name ("EINVAL") in some libnbd versions and a
    number in others."""
    return errno.errorcode.get(e.errno, e.errno) if isinstance(e.errno, int) else e.errno


def expect_errno(want, what, fn, *args, **kw):
    try:
        fn(*args, **kw)
        check(False, "%s: succeeded, want %s" % (what, errno.errorcode[want]))
    except nbd.Error as e:
        check(err_name(e) == errno.errorcode[want], "%s: errno %s, want %s (%s)" %
              (what, err_name(e), errno.errorcode[want], e))


h = nbd.NBD()
h.connect_uri(uri)
h.set_strict_mode(0)
size = h.get_size()
h.pwrite(b"\x5a" * 4096, scratch)

expect_errno(errno.EINVAL, "pread past the end", h.pread, 4096, size)
expect_errno(errno.EINVAL, "pread straddling the end", h.pread, 8192, size - 4096)
expect_errno(errno.EINVAL, "pread at 2^64-512 (wraps)", h.pread, 1024, 2**64 - 512)
expect_errno(errno.ENOSPC, "pwrite past the end", h.pwrite, b"x" * 4096, size)
expect_errno(errno.ENOSPC, "pwrite whose end wraps", h.pwrite, b"x" * 1024, 2**64 - 512)
expect_errno(errno.ENOSPC, "trim past the end", h.trim, 4096, size)
expect_errno(errno.ENOSPC, "zero past the end", h.zero, 4096, size)
# Flags the server does not accept on these commands (unknown bits, and
# REQ_ONE on a read).
expect_errno(errno.EINVAL, "pread with an unknown flag", h.pread, 512, 0, flags=0x40)
expect_errno(errno.EINVAL, "pread with REQ_ONE", h.pread, 512, 0, flags=nbd.CMD_FLAG_REQ_ONE)
expect_errno(errno.EINVAL, "trim with an unknown flag", h.trim, 512, scratch, flags=0x100)
# FUA is valid on every command (the protocol: a server that offers it
# accepts it everywhere, even where it changes nothing).
try:
    h.flush(flags=nbd.CMD_FLAG_FUA)
except nbd.Error as e:
    check(False, "flush with FUA: %s" % e)
if not h.can_fast_zero():
    expect_errno(errno.EINVAL, "zero with FAST_ZERO not advertised", h.zero, 512, scratch,
                 flags=nbd.CMD_FLAG_FAST_ZERO)
# Larger than the advertised maximum (libnbd's own ceiling is 64 MiB).
bmax = h.get_block_size(nbd.SIZE_MAXIMUM)
if 0 < bmax < min(size, 64 << 20):
    try:
        h.pread(bmax + 512, 0)
        check(False, "pread larger than the maximum block size succeeded")
    except nbd.Error as e:
        check(err_name(e) in ("EINVAL", "EOVERFLOW"),
              "pread larger than the maximum: errno %s" % err_name(e))
# Misaligned requests, where the export has a minimum block size.
bmin = h.get_block_size(nbd.SIZE_MINIMUM)
if bmin > 1:
    expect_errno(errno.EINVAL, "pread at offset 1", h.pread, bmin, scratch + 1)
    expect_errno(errno.EINVAL, "pread of min-1 bytes", h.pread, bmin - 1, scratch)
    expect_errno(errno.EINVAL, "pwrite at offset min/2", h.pwrite, b"m" * bmin,
                 scratch + bmin // 2)
    expect_errno(errno.EINVAL, "zero of 1 byte", h.zero, 1, scratch)
# Zero-length requests (libnbd refuses them in strict mode).
h.pread(0, scratch)
h.pwrite(b"", scratch)
# The connection still works and nothing was changed.
check(h.pread(4096, scratch) == b"\x5a" * 4096, "data intact after refused requests")
h.flush()
h.shutdown()
print("strict_mode: %s" % ("FAILED" if failed else "all checks passed"))
sys.exit(1 if failed else 0)
