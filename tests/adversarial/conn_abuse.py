#!/usr/bin/env python3
"""conn_abuse.py SOCKET PID SCRATCH_OFFSET - misbehaving connections.

Option lengths of 0xffffffff (the server discards or closes, never
allocates 4 GiB), clients that never finish the handshake or dribble it
(the handshake timeout closes them; the server was started with a short
one), clients that vanish mid-header or mid-write (nothing beyond what
they sent is applied: a large write to a store is written in segments as
it arrives, src/nbd/transmit.c), a client that floods requests and never
reads a reply, and a client that half-closes after pipelining.  While each misbehaves, a
well-behaved client must be served.
"""
import random
import socket
import struct
import sys
import time

from nbdwire import *

path, pid, scratch = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
ck = Checker("conn_abuse")


def served(what):
    try:
        c = open_export(path)
        err, _ = c.read(0, 4096)
        c.disc()
        ck.eq(err, 0, "while %s: another client reads" % what)
    except (Closed, OSError, AssertionError) as e:
        ck.check(False, "while %s: another client failed: %s" % (what, e))


# 1. Option length 0xffffffff, with and without some of the "data", on
#    unknown and known options.  The server must not buffer it; the
#    connection ends when the client leaves or the handshake times out.
hogs = []
for opt, junk in ((0x1234, 1 << 20), (OPT_GO, 1 << 20), (OPT_EXPORT_NAME, 64 << 10),
                  (OPT_INFO, 0), (OPT_LIST, 5)):
    c = Client(path)
    c.start()
    c.send_opt(opt, length=0xFFFFFFFF)
    sendall_quiet(c.s, b"\x55" * junk)
    hogs.append((opt, c))
served("five clients claim 4 GiB options")
for opt, c in hogs:
    ck.check(sees_eof(c.s), "4 GiB option %#x: closed by the handshake timeout" % opt)
    c.close()
c = Client(path)
c.start()
c.send_opt(OPT_GO, length=0xFFFFFFFF)
sendall_quiet(c.s, b"\x55" * 1000)
c.close()
peak = server_mem_kib(pid)
ck.check(peak is None or peak < (1 << 20),
         "server peak RSS %s KiB stays under 1 GiB after 4 GiB options" % peak)
served("4 GiB options")

# 2. Clients that never finish the handshake: silent after connecting,
#    after the flags, after half an option, and one that dribbles a byte at
#    a time (the deadline covers the whole handshake, not each read).
stalled = []
c = Client(path)
stalled.append(("silent", c))
c = Client(path)
c.start()
stalled.append(("after flags", c))
c = Client(path)
c.start()
c.s.sendall(struct.pack(">QI", IHAVEOPT, OPT_GO))
stalled.append(("mid-option", c))
served("three clients stall in the handshake")
for what, c in stalled:
    ck.check(sees_eof(c.s), "handshake stalled %s: closed by the timeout" % what)
    c.close()

c = Client(path)
c.start()
drip = struct.pack(">QII", IHAVEOPT, 0x999, 200) + b"d" * 200
closed = False
t_end = time.monotonic() + 25
for b in drip * 10:
    if time.monotonic() > t_end:
        break
    if not sendall_quiet(c.s, bytes([b])):
        closed = True
        break
    c.s.settimeout(0.2)
    try:
        # Replies to finished options are fine; EOF means we were dropped.
        while True:
            got = c.s.recv(4096)
            if not got:
                closed = True
                break
    except socket.timeout:
        pass
    except ConnectionResetError:
        closed = True
    if closed:
        break
ck.check(closed, "a client dribbling its handshake is closed by the timeout")
c.close()

# 3. Leaving mid-request: nothing beyond what was received is applied.
#    What was received of a large write may be (it is written in segments
#    while the rest arrives; an unanswered write's effect is undefined, as
#    a failed one's), but only in whole 4 KiB blocks of what was sent.
c = open_export(path)
base = pattern(21, 1 << 20)
ck.eq(c.write(scratch, base), 0, "write the scratch MiB")
c.disc()
for what, data in (("mid-header", struct.pack(">IHHQQI", REQ_MAGIC, 0, CMD_WRITE, 5,
                                               scratch, 1 << 20)[:13]),
                   ("mid-write", struct.pack(">IHHQQI", REQ_MAGIC, 0, CMD_WRITE, 6,
                                             scratch, 1 << 20) + b"\xAB" * 300000),
                   ("mid-write, one byte short",
                    struct.pack(">IHHQQI", REQ_MAGIC, 0, CMD_WRITE, 7, scratch, 4096) +
                    b"\xAC" * 4095)):
    for linger in (False, True):
        c = open_export(path)
        if linger:  # close with a reset rather than a FIN
            c.s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        c.s.sendall(data)
        c.close()
        served("a client left %s" % what)
c = open_export(path)
err, got = c.read(scratch, 1 << 20)
sent = 300000 // 4096 * 4096
ck.check(err == 0 and got[sent:] == base[sent:],
         "writes cut off mid-payload: nothing past what was sent was applied")
ck.check(err == 0 and all(got[i:i + 4096] in (base[i:i + 4096], b"\xAB" * 4096)
                          for i in range(0, sent, 4096)),
         "writes cut off mid-payload: what was sent is old or new, block by block")
ck.eq(c.write(scratch, base), 0, "write the scratch MiB again")
c.disc()

# 4. A client that floods reads and never reads a reply: its own replies
#    back up, other clients are still served, and when it leaves the
#    server lets go of it.
c = open_export(path)
c.s.setblocking(False)
flood = struct.pack(">IHHQQI", REQ_MAGIC, 0, CMD_READ, 9, 0, 65536) * 64
sent = 0
t_end = time.monotonic() + 10
while sent < (64 << 20) and time.monotonic() < t_end:
    try:
        sent += c.s.send(flood)
    except BlockingIOError:
        break
served("a client floods requests without reading replies")
c.close()
served("a flooding client left")

# 5. Half-close after pipelining: requests already sent are answered,
#    then the server closes.
c = open_export(path)
for i in range(20):
    c.send_req(CMD_READ, scratch, 4096, cookie=100 + i)
c.s.shutdown(socket.SHUT_WR)
answered = 0
try:
    for i in range(20):
        err, ck_, data = c.reply(4096)
        if err == 0 and data == base[:4096]:
            answered += 1
except (Closed, AssertionError):
    pass
ck.eq(answered, 20, "requests sent before a half-close are all answered")
ck.check(sees_eof(c.s), "server closes after the client's half-close")
c.close()

# 6. Seeded random mixes of valid and invalid requests, cut off at a random
#    byte, the connection closed with a FIN or a reset while the workers
#    are busy with them (races between the reader, workers and teardown
#    show up under the sanitizers).  The client does not read replies, so
#    the server may stop reading it: sends give up after half a second.
rng = random.Random(5)
for it in range(150):
    c = open_export(path, structured=bool(it & 1))
    buf = b""
    for i in range(rng.randrange(1, 60)):
        cmd = rng.choice((CMD_READ, CMD_READ, CMD_WRITE, CMD_FLUSH, CMD_TRIM, CMD_CACHE,
                          CMD_WRITE_ZEROES, 9))
        off = rng.choice((0, 4096, 1 << 20, scratch, 64 << 20, 2**64 - 512,
                          rng.randrange(0, 64 << 20)))
        n = rng.choice((0, 1, 512, 4096, 65536, 1 << 20, 33 << 20))
        fl = rng.choice((0, 0, 0, FLAG_FUA, FLAG_NO_HOLE, FLAG_FAST_ZERO, 0x8000))
        if cmd in (CMD_WRITE, CMD_TRIM, CMD_WRITE_ZEROES):
            # Only the scratch area, or out of range.
            off = rng.choice((64 << 20, 2**64 - 512, scratch + off % (16 << 20)))
            if cmd == CMD_WRITE:
                n = min(n, 1 << 20)
        pl = b"\x11" * n if cmd == CMD_WRITE else b""
        buf += struct.pack(">IHHQQI", REQ_MAGIC, fl, cmd, i, off, n) + pl
    cut = rng.choice((len(buf), rng.randrange(0, len(buf) + 1)))
    if rng.random() < 0.3:
        c.s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    c.s.settimeout(0.5)
    try:
        c.s.sendall(buf[:cut])
    except OSError:
        pass
    c.close()
served("150 random request mixes cut off")

served("the whole connection abuse")
ck.check(alive(pid), "server process alive")
ck.done()
