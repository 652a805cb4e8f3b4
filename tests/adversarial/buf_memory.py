#!/usr/bin/env python3
"""buf_memory.py SOCKET PID BOUND_MIB - the server's payload buffers stay
within one server-wide bound (uraid serve --max-buffer-memory).

16 connections each pipeline 16 reads of 4 MiB and read the replies, then
go idle: the server's RSS must grow by less than the bound (plus a fixed
allowance for per-connection buffers and thread stacks), and once idle it
must give the buffers back.  Then each connection sends 16 more such reads
and reads no reply: the same bound holds (the waiting requests wait for
buffers; nothing fails).  Fails while each worker keeps its own 4 MiB
buffer (16 x 16 x 4 MiB = 1 GiB) and each connection pins 64 MiB of
unread replies.
"""
import struct
import sys
import time

from nbdwire import *

path, pid, bound_mib = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
ck = Checker("buf_memory")
N, DEPTH, LEN = 16, 16, 4 << 20
SLACK_MIB = 48  # rbuf, batch arena, small worker buffers, 256 stacks, ASan


def rss_mib():
    kib = server_mem_kib(pid, "VmRSS")
    if kib is None:
        sys.exit("buf_memory: cannot read VmRSS of process %d" % pid)
    return kib >> 10


def pipeline_reads(c, n):
    c.s.sendall(b"".join(struct.pack(">IHHQQI", REQ_MAGIC, 0, CMD_READ, k, 0, LEN)
                         for k in range(n)))


w = open_export(path)
ck.eq(w.write(0, pattern(1, LEN)), 0, "write the region read below")
w.disc()
conns = [open_export(path) for _ in range(N)]
base = rss_mib()

for c in conns:
    pipeline_reads(c, DEPTH)
bad = 0
for c in conns:
    for _ in range(DEPTH):
        err, _, data = c.reply(LEN)
        bad += err != 0 or len(data) != LEN
ck.eq(bad, 0, "failed or short 4 MiB reads")
grown = rss_mib() - base
ck.check(grown < bound_mib + SLACK_MIB,
         "%d connections idle after %d x 4 MiB reads each: RSS grew %d MiB (bound %d + %d)"
         % (N, DEPTH, grown, bound_mib, SLACK_MIB))
print("buf_memory: idle after reads: RSS +%d MiB" % grown)
# Given back when idle: poll (a generous limit turns "never" into a failure).
t_end = time.monotonic() + 30
while rss_mib() - base >= SLACK_MIB and time.monotonic() < t_end:
    time.sleep(0.2)
grown = rss_mib() - base
ck.check(grown < SLACK_MIB, "idle connections still hold %d MiB of buffers" % grown)
print("buf_memory: idle a while later: RSS +%d MiB" % grown)

for c in conns:
    pipeline_reads(c, DEPTH)
time.sleep(2)  # let the workers take the requests; not a timing assertion
grown = rss_mib() - base
ck.check(grown < bound_mib + SLACK_MIB,
         "%d connections with %d unread 4 MiB replies each: RSS grew %d MiB (bound %d + %d)"
         % (N, DEPTH, grown, bound_mib, SLACK_MIB))
print("buf_memory: replies unread: RSS +%d MiB" % grown)
# A connection that reads its replies gets them all: waiting, not failing.
bad = 0
for _ in range(DEPTH):
    err, _, data = conns[0].reply(LEN)
    bad += err != 0 or len(data) != LEN
ck.eq(bad, 0, "failed reads once the client reads its replies")
for c in conns:
    c.close()
ck.check(alive(pid), "server process alive")
ck.done()
