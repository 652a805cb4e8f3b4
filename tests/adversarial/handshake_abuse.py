#!/usr/bin/env python3
"""handshake_abuse.py SOCKET PID - attack the fixed-newstyle handshake.

Every case runs on its own connection; the server may close that
connection, but it must never crash, hang, reply out of step, or refuse
the next client.  Between cases a fresh client completes a normal
OPT_GO, so the first case that kills or wedges the server is named.
"""
import random
import struct
import sys

from nbdwire import *

path, pid = sys.argv[1], int(sys.argv[2])
ck = Checker("handshake_abuse")


def server_still_serves(what):
    """A well-behaved client still gets through the handshake and reads."""
    try:
        c = open_export(path)
        err, _ = c.read(0, 512)
        c.disc()
        ck.eq(err, 0, "after %s: read on a fresh connection" % what)
    except (Closed, OSError, AssertionError) as e:
        ck.check(False, "after %s: fresh client failed: %s" % (what, e))
    ck.check(alive(pid), "after %s: server process alive" % what)


def expect_closed(c, what):
    """The server must drop this connection (without hanging)."""
    ck.check(sees_eof(c.s), "%s: server closes the connection" % what)
    c.close()


# A complete, valid session as raw bytes: the prefixes of this stream are
# the truncated handshakes.
go = Client.go_data(b"", (INFO_BLOCK_SIZE, INFO_NAME))
valid = (struct.pack(">I", 3) +
         struct.pack(">QII", IHAVEOPT, OPT_STRUCTURED_REPLY, 0) +
         struct.pack(">QII", IHAVEOPT, OPT_GO, len(go)) + go +
         struct.pack(">IHHQQI", REQ_MAGIC, 0, CMD_READ, 1, 0, 4096) +
         struct.pack(">IHHQQI", REQ_MAGIC, 0, CMD_DISC, 2, 0, 0))

# 1. Closing mid-handshake at every byte boundary.
for cut in range(0, len(valid)):
    c = Client(path)
    try:
        c.greeting()
        sendall_quiet(c.s, valid[:cut])
    finally:
        c.close()
server_still_serves("truncated handshakes (every prefix)")

# 2. Closing before reading the greeting, and half-closing the write side.
c = Client(path)
c.close()
c = Client(path)
c.greeting()
c.s.shutdown(1)
expect_closed(c, "client shut its write side before the flags")
server_still_serves("early close")

# 3. Unknown client flags: the protocol says the server closes.
c = Client(path)
c.start(cflags=0xFFFFFFFC | 3)
expect_closed(c, "unknown client flags")

# 4. Wrong option magic (NBDMAGIC instead of IHAVEOPT, and zero).
for magic in (NBD_MAGIC, 0, REP_MAGIC):
    c = Client(path)
    c.start()
    sendall_quiet(c.s, struct.pack(">QII", magic, OPT_GO, 0))
    expect_closed(c, "option magic %x" % magic)
server_still_serves("wrong option magic")

# 5. Garbage from the first byte, a few seeded lengths.
rng = random.Random(1)
for n in (1, 3, 4, 20, 100, 4096, 70000):
    c = Client(path)
    c.greeting()
    sendall_quiet(c.s, rng.randbytes(n))
    c.s.shutdown(1)
    ck.check(sees_eof(c.s), "garbage of %d bytes: connection ends" % n)
    c.close()
server_still_serves("garbage handshakes")

# 6. Unknown options get NBD_REP_ERR_UNSUP, their data is consumed, and a
#    following OPT_GO works on the same connection.
c = Client(path)
c.start()
for opt, data in ((0x1234, b""), (0x1234, b"x" * 300), (0x7FFFFFFF, b"\0" * 16),
                  (0xFFFFFFFF, b"abc"), (OPT_STARTTLS, b""),
                  (OPT_LIST_META_CONTEXT, Client.go_data() + b"\0\0\0\0"),
                  (OPT_SET_META_CONTEXT, b"\0" * 9)):
    c.send_opt(opt, data)
    o, t, _ = c.opt_reply()
    ck.eq(o, opt, "unknown option %#x: reply names the option" % opt)
    ck.check(t & REP_ERR, "unknown option %#x: an error reply (got %#x)" % (opt, t))
    if opt not in (OPT_STARTTLS, OPT_LIST_META_CONTEXT, OPT_SET_META_CONTEXT):
        ck.eq(t, REP_ERR_UNSUP, "unknown option %#x: NBD_REP_ERR_UNSUP" % opt)
c.go()
ck.eq(c.read(0, 4096)[0], 0, "read after unknown options")
c.disc()

# 7. Oversized option data (above the server's 16 KiB buffer) on known and
#    unknown options: discarded in pieces, answered, stream stays in step.
for opt in (OPT_GO, OPT_INFO, OPT_LIST, 0x4242):
    c = Client(path)
    c.start()
    c.send_opt(opt, b"\xAA" * (1 << 20))
    o, t, _ = c.opt_reply()
    ck.check(o == opt and t & REP_ERR,
             "1 MiB of data on option %#x: error reply (got %#x for %#x)" % (opt, t, o))
    c.go()
    ck.eq(c.read(0, 512)[0], 0, "read after a 1 MiB option %#x" % opt)
    c.disc()

# 8. Export names over 4096 bytes: an error for OPT_GO/OPT_INFO (the session
#    goes on), a close for OPT_EXPORT_NAME (which has no error reply).
for n in (4097, 8192, 16000):
    for opt in (OPT_INFO, OPT_GO):
        c = Client(path)
        c.start()
        c.send_opt(opt, Client.go_data(b"n" * n))
        reps = c.opt_replies()
        ck.check(reps[-1][1] & REP_ERR,
                 "%d-byte name on option %d: error reply (got %#x)" % (n, opt, reps[-1][1]))
        c.go()
        ck.eq(c.read(0, 512)[0], 0, "read after a %d-byte name" % n)
        c.disc()
    c = Client(path)
    c.start()
    c.send_opt(OPT_EXPORT_NAME, b"n" * n)
    expect_closed(c, "OPT_EXPORT_NAME with a %d-byte name" % n)
server_still_serves("long export names")

# 9. OPT_GO/INFO payloads whose inner lengths lie: name length beyond the
#    option, 0xffffffff, info count too large or too small, short data.
lies = [
    b"",                                            # no name length
    b"\0\0",                                        # short name length
    struct.pack(">I", 0xFFFFFFFF) + b"\0\0",        # huge name length
    struct.pack(">I", 10) + b"abc\0\0",             # name beyond the data
    struct.pack(">I", 3) + b"abc\0",                # name one byte too long (count cut)
    struct.pack(">I", 5) + b"abc\0\0",              # name runs into the count
    struct.pack(">I", 0) + b"\0",                   # short info count
    struct.pack(">I", 0) + b"\xff\xff",             # 65535 infos, none sent
    struct.pack(">I", 0) + b"\0\1",                 # 1 info, none sent
    struct.pack(">I", 0) + b"\0\0" + b"\0\3",       # trailing bytes
    struct.pack(">I", 0) + b"\0\1\0",               # half an info
]
for data in lies:
    for opt in (OPT_INFO, OPT_GO):
        c = Client(path)
        c.start()
        c.send_opt(opt, data)
        reps = c.opt_replies()
        ck.eq(reps[-1][1], REP_ERR_INVALID, "option %d with data %s" % (opt, data.hex()))
        c.go()
        c.disc()

# 10. Unknown info requests are ignored; an unknown export name is
#     NBD_REP_ERR_UNKNOWN; LIST and STRUCTURED_REPLY with data are invalid.
c = Client(path)
c.start()
c.send_opt(OPT_INFO, Client.go_data(b"", (0xFFFF, 0x1234, INFO_NAME, INFO_NAME)))
reps = c.opt_replies()
ck.eq(reps[-1][1], REP_ACK, "OPT_INFO with unknown info types")
c.send_opt(OPT_GO, Client.go_data(b"no-such-export"))
reps = c.opt_replies()
ck.eq(reps[-1][1], REP_ERR_UNKNOWN, "OPT_GO for an unknown export")
ck.check(b"no-such-export" in reps[-1][2], "the refusal names the export (%r)" % (reps[-1],))
for name in (b"\0", b"\0" * 3, b"\xff\xfe", b" ", b"/"):
    c.send_opt(OPT_INFO, Client.go_data(name))
    reps = c.opt_replies()
    ck.eq(reps[-1][1], REP_ERR_UNKNOWN, "OPT_INFO for the name %r" % name)
    ck.check(reps[-1][2].decode("utf-8", "replace").isprintable(),
             "the refusal for %r is printable text (%r)" % (name, reps[-1][2]))
c.send_opt(OPT_LIST, b"junk")
ck.eq(c.opt_replies()[-1][1], REP_ERR_INVALID, "OPT_LIST with data")
c.send_opt(OPT_STRUCTURED_REPLY, b"junk")
ck.eq(c.opt_replies()[-1][1], REP_ERR_INVALID, "OPT_STRUCTURED_REPLY with data")
c.send_opt(OPT_STRUCTURED_REPLY)
c.send_opt(OPT_STRUCTURED_REPLY)
ck.eq(c.opt_reply()[1], REP_ACK, "first OPT_STRUCTURED_REPLY")
ck.check(c.opt_reply()[1] in (REP_ACK, REP_ERR_INVALID), "repeated OPT_STRUCTURED_REPLY")
c.structured = True
c.go()
err, data = c.read(0, 1000)
ck.check(err == 0 and len(data) == 1000, "structured read after the oddities")
c.disc()

# 11. Many options in one burst (pipelined before reading any reply).
c = Client(path)
c.start()
burst = b""
for i in range(300):
    burst += struct.pack(">QII", IHAVEOPT, 0x100 + i, 4) + b"abcd"
c.s.sendall(burst)
bad = sum(1 for _ in range(300) if c.opt_reply()[1] != REP_ERR_UNSUP)
ck.eq(bad, 0, "300 pipelined unknown options all answered UNSUP")
c.go()
c.disc()

# 12. OPT_ABORT ends the session (ACK optional), server goes on.
c = Client(path)
c.start()
c.send_opt(OPT_ABORT, b"data is ignored or refused")
expect_closed(c, "OPT_ABORT")

# 13. Metadata contexts (base:allocation, the only one): refused before
#     structured replies; listed with no query or "base:"; selected only by
#     its exact name; lying lengths and unknown exports are errors; an
#     unknown namespace selects nothing.  Then NBD_CMD_BLOCK_STATUS.
ALLOC = b"base:allocation"
c = Client(path)
c.start()
c.send_opt(OPT_SET_META_CONTEXT, Client.meta_data(queries=(ALLOC,)))
ck.eq(c.opt_reply()[1], REP_ERR_INVALID, "SET_META_CONTEXT before structured replies")
c.send_opt(OPT_STRUCTURED_REPLY)
ck.eq(c.opt_reply()[1], REP_ACK, "structured replies")
for queries in ((), (b"base:",), (b"x-foo:bar", ALLOC)):
    c.send_opt(OPT_LIST_META_CONTEXT, Client.meta_data(queries=queries))
    reps = c.opt_replies()
    ctxs = [d[4:] for _, t, d in reps if t == REP_META_CONTEXT]
    ck.eq((ctxs, reps[-1][1]), ([ALLOC], REP_ACK), "LIST_META_CONTEXT %r" % (queries,))
for what, data, want in (
        ("unknown namespace", Client.meta_data(queries=(b"x-foo:bar",)), ([], REP_ACK)),
        ("base: is for listing", Client.meta_data(queries=(b"base:",)), ([], REP_ACK)),
        ("unknown export", Client.meta_data(b"nosuch", (ALLOC,)), ([], REP_ERR_UNKNOWN)),
        ("query longer than the option", Client.meta_data(queries=(ALLOC,))[:-3],
         ([], REP_ERR_INVALID)),
        ("count of queries too high", struct.pack(">II", 0, 5) + struct.pack(">I", 1) + b"x",
         ([], REP_ERR_INVALID)),
        ("name longer than the option", struct.pack(">I", 1000) + b"ab", ([], REP_ERR_INVALID)),
        ("trailing bytes", Client.meta_data(queries=(ALLOC,)) + b"zz", ([], REP_ERR_INVALID))):
    c.send_opt(OPT_SET_META_CONTEXT, data)
    reps = c.opt_replies()
    ck.eq(([d[4:] for _, t, d in reps if t == REP_META_CONTEXT], reps[-1][1]), want,
          "SET_META_CONTEXT: %s" % what)
c.send_opt(OPT_SET_META_CONTEXT, Client.meta_data(queries=(b"x-foo:bar", ALLOC, ALLOC)))
reps = c.opt_replies()
sel = [struct.unpack(">I", d[:4])[0] for _, t, d in reps if t == REP_META_CONTEXT]
ck.check(len(sel) == 1 and sel[0] != 0 and reps[-1][1] == REP_ACK,
         "SET_META_CONTEXT base:allocation: one context, a non-zero id (%r)" % (reps,))
c.go(structured=False)  # structured replies are already on
c.structured = True
ctx = sel[0] if sel else None
base = 32 << 20  # far from what the sections above wrote
c.write(base + 65536, b"\x5a" * 65536)
err, _ = c.cmd(CMD_BLOCK_STATUS, base, 1 << 20)
ck.eq(err, 0, "BLOCK_STATUS of 1 MiB")
if c.status:
    descs = c.status[1]
    ck.eq(c.status[0], ctx, "BLOCK_STATUS names the selected context")
    ck.eq(descs[:2], [(65536, 3), (65536, 0)],
          "BLOCK_STATUS: a hole (never written), then the 64 KiB written")
    ck.check(sum(n for n, _ in descs[:-1]) < (1 << 20) and all(n for n, _ in descs),
             "BLOCK_STATUS descriptors within the request, none empty")
c.status = None
err, _ = c.cmd(CMD_BLOCK_STATUS, base, 1 << 20, FLAG_REQ_ONE)
ck.check(err == 0 and c.status and c.status[1] == [(65536, 3)],
         "BLOCK_STATUS with REQ_ONE: one descriptor (%r)" % (c.status,))
c.status = None
err, _ = c.cmd(CMD_BLOCK_STATUS, base + 65536 + 4096, 8192, FLAG_REQ_ONE)
ck.check(err == 0 and c.status and c.status[1] == [(8192, 0)],
         "BLOCK_STATUS with REQ_ONE never exceeds the request (%r)" % (c.status,))
for what, off, n, fl in (("past the end", c.size - 4096, 8192, 0),
                         ("of length 0", 0, 0, 0), ("with NO_HOLE", 0, 4096, FLAG_NO_HOLE)):
    err, _ = c.cmd(CMD_BLOCK_STATUS, off, n, fl)
    ck.eq(err, EINVAL, "BLOCK_STATUS %s" % what)
ck.eq(c.read(base + 65536, 4096), (0, b"\x5a" * 4096), "read after BLOCK_STATUS")
c.disc()

server_still_serves("the whole handshake abuse")
ck.done()
