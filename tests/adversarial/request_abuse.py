#!/usr/bin/env python3
"""request_abuse.py SOCKET PID SCRATCH_OFFSET - attack the transmission phase.

Out-of-range and overflowing requests, unknown commands and flags,
oversized and misaligned requests (when the export advertises a minimum
block size), pipelined mixes of good and bad requests, a WRITE refused
with its payload still consumed, a bad request magic.  Every refused
request must get the error the NBD protocol names for it, on the same
connection, which must keep working afterwards; nothing refused may change
the data.  Runs once with simple and once with structured replies.  Writes
only at or above SCRATCH_OFFSET (and the export's last block).
"""
import struct
import sys

from nbdwire import *

path, pid, scratch = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
ck = Checker("request_abuse")


def run(structured):
    mode = "structured" if structured else "simple"
    c = open_export(path, structured=structured)
    size = c.size
    bmin, bpref, bmax = c.block or (1, 4096, 32 << 20)
    tf = c.tflags
    ro = bool(tf & 2)
    ck.check(size is not None and size > scratch, "%s: export size known" % mode)

    def ok_still(what):
        """The connection still answers a valid request correctly."""
        want = pattern(7, 4096)
        if not ro:
            ck.eq(c.write(scratch, want), 0, "%s: write after %s" % (mode, what))
        err, got = c.read(scratch, 4096)
        ck.check(err == 0 and (ro or got == want),
                 "%s: read-back after %s (err %d)" % (mode, what, err))

    # Known content in the last block: no refused request may change it.
    last = size - max(bmin, 4096)
    tail = pattern(11, size - last)
    ck.eq(c.write(last, tail), 0, "%s: write the last block" % mode)

    # 1. Out of range and overflowing: EINVAL for reads, ENOSPC for writes
    #    (the protocol's choice), and the connection keeps working.
    wrap = 2**64 - 512
    cases = [
        ("read past the end", CMD_READ, size, 512, EINVAL),
        ("read straddling the end", CMD_READ, last, 2 * (size - last), EINVAL),
        ("read at 2^63", CMD_READ, 2**63, 512, EINVAL),
        ("read whose offset+len wraps 2^64", CMD_READ, wrap, 1024, EINVAL),
        ("read at 2^64-512, len 512", CMD_READ, wrap, 512, EINVAL),
        ("read of 4 GiB-512", CMD_READ, 0, 0xFFFFFE00, EINVAL),
        ("trim past the end", CMD_TRIM, size, 4096, ENOSPC),
        ("trim whose offset+len wraps", CMD_TRIM, wrap, 4096, ENOSPC),
        ("zero past the end", CMD_WRITE_ZEROES, size - bmin, 2 * bmin, ENOSPC),
        ("zero whose offset+len wraps", CMD_WRITE_ZEROES, wrap, 0xFFFFFE00, ENOSPC),
        ("cache past the end", CMD_CACHE, size, 4096, EINVAL),
    ]
    for what, cmd, off, n, want in cases:
        if ro and want == ENOSPC:
            want = EPERM
        err, data = c.cmd(cmd, off, n)
        ck.eq(err, want, "%s: %s" % (mode, what))
        ck.eq(len(data), 0, "%s: %s sends no data" % (mode, what))
    ok_still("out-of-range requests")

    # 2. A WRITE out of range still has its payload consumed: the next
    #    request on the same stream must parse.
    for what, off, n in (("write past the end", size, 4096),
                         ("write straddling the end", last, 2 * (size - last)),
                         ("write whose offset+len wraps", wrap, 4096)):
        err = c.cmd(CMD_WRITE, off, n, payload=b"\xEE" * n)[0]
        ck.eq(err, EPERM if ro else ENOSPC, "%s: %s" % (mode, what))
    ok_still("refused writes with payload")
    err, got = c.read(last, size - last)
    ck.check(err == 0 and got == tail,
             "%s: the last block is unchanged by refused requests" % mode)

    # 3. Unknown commands: EINVAL, connection keeps working.  (BLOCK_STATUS
    #    was never negotiated, so it is unknown too.)
    for cmd in (CMD_BLOCK_STATUS, 8, 9, 0x7F, 0x100, 0xFFFF):
        err, _ = c.cmd(cmd, 0, 512)
        ck.eq(err, EINVAL, "%s: unknown command %#x" % (mode, cmd))
    ok_still("unknown commands")

    # 4. Unknown and inapplicable flags: EINVAL.
    for what, cmd, flags in (("read with flag bit 15", CMD_READ, 0x8000),
                             ("read with REQ_ONE", CMD_READ, FLAG_REQ_ONE),
                             ("read with every flag", CMD_READ, 0xFFFF),
                             ("flush with NO_HOLE", CMD_FLUSH, FLAG_NO_HOLE),
                             ("trim with bit 7", CMD_TRIM, 0x80),
                             ("zero with bit 12", CMD_WRITE_ZEROES, 0x1000),
                             ("cache with FUA", CMD_CACHE, 0xFFFE)):
        err, data = c.cmd(cmd, scratch, 4096 if cmd != CMD_FLUSH else 0, flags)
        ck.eq(err, EINVAL, "%s: %s" % (mode, what))
    if not structured:
        err, _ = c.cmd(CMD_READ, scratch, 4096, FLAG_DF)
        ck.eq(err, EINVAL, "%s: read with DF without structured replies" % mode)
    if not (tf & (1 << 11)):
        err, _ = c.cmd(CMD_WRITE_ZEROES, scratch, 4096, FLAG_FAST_ZERO)
        ck.eq(err, EINVAL, "%s: FAST_ZERO not advertised" % mode)
    # A WRITE with an unknown flag: refused, payload consumed.
    err = c.cmd(CMD_WRITE, scratch, 4096, 0x4000, b"\xDD" * 4096)[0]
    ck.eq(err, EINVAL, "%s: write with flag bit 14" % mode)
    ok_still("unknown flags")

    # 5. Larger than the advertised maximum: EINVAL (simple) or EOVERFLOW
    #    (structured) for reads; writes refused with the payload consumed.
    if bmax + bmin <= size:
        n = bmax + bmin
        err, _ = c.cmd(CMD_READ, 0, n)
        ck.check(err in ((EOVERFLOW, EINVAL) if structured else (EINVAL,)),
                 "%s: read of max+%d bytes (err %d)" % (mode, bmin, err))
        if not ro:
            err = c.cmd(CMD_WRITE, 0, n, payload=b"\xCC" * n)[0]
            ck.check(err in (EINVAL, EOVERFLOW, ENOSPC),
                     "%s: write of max+%d bytes (err %d)" % (mode, bmin, err))
        ok_still("oversized requests")

    # 6. Misaligned requests, when the export has a minimum block size.
    if bmin > 1:
        for what, cmd, off, n in (("read at offset 1", CMD_READ, scratch + 1, bmin),
                                  ("read of min-1 bytes", CMD_READ, scratch, bmin - 1),
                                  ("read of min+1 bytes", CMD_READ, scratch, bmin + 1),
                                  ("trim at offset min/2", CMD_TRIM, scratch + bmin // 2, bmin),
                                  ("zero of 1 byte", CMD_WRITE_ZEROES, scratch, 1)):
            err, data = c.cmd(cmd, off, n)
            ck.eq(err, EINVAL, "%s: misaligned %s" % (mode, what))
            ck.eq(len(data), 0, "%s: misaligned %s sends no data" % (mode, what))
        before = c.read(scratch, 2 * bmin)[1]
        err = c.cmd(CMD_WRITE, scratch + 1, bmin, payload=b"\xBB" * bmin)[0]
        ck.eq(err, EINVAL, "%s: misaligned write at offset 1" % mode)
        err = c.cmd(CMD_WRITE, scratch, bmin + 3, payload=b"\xBB" * (bmin + 3))[0]
        ck.eq(err, EINVAL, "%s: write of min+3 bytes" % mode)
        ck.eq(c.read(scratch, 2 * bmin)[1], before,
              "%s: misaligned writes changed nothing" % mode)
        ok_still("misaligned requests")

    # 7. Zero-length requests are valid (or at worst refused), never fatal.
    for cmd in (CMD_READ, CMD_WRITE, CMD_TRIM, CMD_WRITE_ZEROES, CMD_CACHE):
        err, data = c.cmd(cmd, scratch, 0)
        ck.check(err in (0, EINVAL), "%s: zero-length %d (err %d)" % (mode, cmd, err))
        ck.eq(len(data), 0, "%s: zero-length %d sends no data" % (mode, cmd))
    err, _ = c.cmd(CMD_FLUSH, 0, 0)
    ck.eq(err, 0, "%s: flush" % mode)
    err, _ = c.cmd(CMD_FLUSH, 4096, 4096)
    ck.check(err in (0, EINVAL), "%s: flush with offset and length (err %d)" % (mode, err))
    ok_still("zero-length requests")

    # 8. A pipelined burst of good and bad requests, sent before any reply
    #    is read: every cookie answered once, with the right error.
    want = {}
    burst = b""
    for i in range(200):
        cookie = 0xC0FFEE0000000000 | i
        kind = i % 5
        if kind == 0:
            req = (CMD_READ, scratch, 4096, 0, b"")
            want[cookie] = (0, 4096)
        elif kind == 1:
            req = (CMD_READ, size, 4096, 0, b"")
            want[cookie] = (EINVAL, 0)
        elif kind == 2:
            req = (CMD_WRITE, wrap, 512, 0, b"\x99" * 512)
            want[cookie] = (EPERM if ro else ENOSPC, 0)
        elif kind == 3:
            req = (0x42, 0, 0, 0, b"")
            want[cookie] = (EINVAL, 0)
        else:
            req = (CMD_WRITE, scratch + 8192, 512, 0x2000, b"\x98" * 512)
            want[cookie] = (EINVAL, 0)
        cmd, off, n, fl, pl = req
        burst += struct.pack(">IHHQQI", REQ_MAGIC, fl, cmd, cookie, off, n) + pl
    c.s.sendall(burst)
    seen = set()
    for _ in range(200):
        # A READ's reply length depends on the request: peek via the cookie
        # map by reading the header first.
        magic = recvn(c.s, 4)
        if struct.unpack(">I", magic)[0] == SIMPLE_MAGIC:
            err, cookie = struct.unpack(">IQ", recvn(c.s, 12))
            w = want.get(cookie)
            if w and err == 0:
                recvn(c.s, w[1])
        else:
            # Structured: push the magic back by parsing the rest by hand.
            flags, rtype, cookie, n = struct.unpack(">HHQI", recvn(c.s, 16))
            body = recvn(c.s, n)
            err = struct.unpack(">I", body[:4])[0] if rtype & 0x8000 else 0
            while not flags & REPLY_FLAG_DONE:
                assert struct.unpack(">I", recvn(c.s, 4))[0] == STRUCT_MAGIC
                flags, rtype, cookie2, n = struct.unpack(">HHQI", recvn(c.s, 16))
                assert cookie2 == cookie
                body = recvn(c.s, n)
                if rtype & 0x8000:
                    err = struct.unpack(">I", body[:4])[0]
        w = want.get(cookie)
        ck.check(w is not None and cookie not in seen,
                 "%s: burst reply for an expected cookie %x" % (mode, cookie))
        seen.add(cookie)
        if w:
            ck.eq(err, w[0], "%s: burst cookie %x" % (mode, cookie))
    ck.eq(len(seen), 200, "%s: every burst request answered once" % mode)
    ok_still("a pipelined burst")

    # 9. A bad request magic ends this connection only.
    c.send_req(CMD_READ, 0, 512, magic=0x12345678)
    ck.check(sees_eof(c.s), "%s: bad request magic closes the connection" % mode)
    c.close()
    c = open_export(path, structured=structured)
    err, got = c.read(last, size - last)
    ck.check(err == 0 and got == tail, "%s: new connection reads the last block" % mode)
    c.disc()


run(False)
run(True)
ck.check(alive(pid), "server process alive")
ck.done()
