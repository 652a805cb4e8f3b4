#!/usr/bin/env python3
"""stuck_reader.py SOCKET MODE - a client that stops reading replies.

MODE "hold": pipeline reads until the server's replies back up, print
READY, and hold the connection open without reading (until killed): the
server's shutdown must not wait for this client forever.
MODE "pin PID": pipeline 16 reads of the maximum block size on one
connection without reading any reply, then check how much memory the
server pinned for them: payload buffers held for a client that does not
read must stay bounded (fails while the server buffers threads x max).
"""
import struct
import sys
import time

from nbdwire import *

path, mode = sys.argv[1], sys.argv[2]
c = open_export(path)
bmax = c.block[2] if c.block else 32 << 20
if mode == "hold":
    c.s.setblocking(False)
    flood = struct.pack(">IHHQQI", REQ_MAGIC, 0, CMD_READ, 9, 0, 65536) * 64
    t_end = time.monotonic() + 5
    while time.monotonic() < t_end:
        try:
            c.s.send(flood)
        except BlockingIOError:
            break
    print("READY", flush=True)
    time.sleep(120)
    sys.exit(0)

pid = int(sys.argv[3])
ck = Checker("stuck_reader")
before = server_mem_kib(pid, "VmRSS")
n = min(bmax, c.size)
c.s.sendall(struct.pack(">IHHQQI", REQ_MAGIC, 0, CMD_READ, 1, 0, n) * 16)
time.sleep(2)  # let the workers take the requests; not a timing assertion
rss = server_mem_kib(pid, "VmRSS")
grown_mib = (rss - before) >> 10 if before and rss else 0
ck.check(grown_mib < 256, "16 unread %d-byte reads pin %d MiB in the server (limit 256)"
         % (n, grown_mib))
c.close()
ck.done()
